// The NATS space's URIs (nats_uri.h) without a server: every form the space accepts, what each
// parameter sets, where the deployment and the role come from, and a clear error for each bad
// URI.
#include "space/nats/nats_uri.h"

#include <gtest/gtest.h>

#include <string>

namespace acan::nats {
namespace {

NatsUri MustParse(std::string_view text, const NatsUriEnvironment& env = {},
                  const SpaceOptions& defaults = {}) {
  auto parsed = ParseNatsUri(text, defaults, env);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status().ToString();
  return parsed.ok() ? std::move(parsed).value() : NatsUri{};
}

TEST(NatsUriTest, OneServerWithTheDefaults) {
  const NatsUri uri = MustParse("nats://127.0.0.1:4222");
  EXPECT_FALSE(uri.local);
  EXPECT_EQ(uri.options.servers, "nats://127.0.0.1:4222");
  EXPECT_EQ(uri.options.stream, "acan");
  EXPECT_FALSE(uri.stream_named);
  EXPECT_FALSE(uri.options.memory_storage);
  EXPECT_EQ(uri.options.replicas, 1);
  EXPECT_EQ(uri.options.request_ms, 5000);
  EXPECT_EQ(uri.options.retry_ms, 60000);
  EXPECT_EQ(uri.options.dedupe_ms, 30000);
  EXPECT_EQ(uri.options.chunk_bytes, 0u);
  EXPECT_EQ(uri.options.role, "");
  EXPECT_TRUE(uri.secure_dir.empty());
  EXPECT_FALSE(uri.options.credentials.has_value());
}

TEST(NatsUriTest, AClusterIsEveryServerWithTheScheme) {
  EXPECT_EQ(MustParse("nats://a:4222,b:4223,10.0.0.3:4224").options.servers,
            "nats://a:4222,nats://b:4223,nats://10.0.0.3:4224");
  EXPECT_EQ(MustParse("tls://a:1,b:2?secure=/dep").options.servers, "tls://a:1,tls://b:2");
}

TEST(NatsUriTest, EveryParameterSetsItsOption) {
  SpaceOptions defaults;
  defaults.fenced = {Pattern::Parse("job.lease").value()};
  const NatsUri uri = MustParse(
      "nats://h:1?stream=my-stream_2&storage=memory&replicas=3&request_ms=250&retry_ms=9000"
      "&dedupe_ms=1000&chunk_bytes=1024&max_value_bytes=100&max_total_bytes=1000&role=handler",
      {}, defaults);
  EXPECT_EQ(uri.options.stream, "my-stream_2");
  EXPECT_TRUE(uri.stream_named);
  EXPECT_TRUE(uri.options.memory_storage);
  EXPECT_EQ(uri.options.replicas, 3);
  EXPECT_EQ(uri.options.request_ms, 250);
  EXPECT_EQ(uri.options.retry_ms, 9000);
  EXPECT_EQ(uri.options.dedupe_ms, 1000);
  EXPECT_EQ(uri.options.chunk_bytes, 1024u);
  EXPECT_EQ(uri.options.limits.max_value_bytes, 100u);
  EXPECT_EQ(uri.options.limits.max_total_bytes, 1000u);
  // What the URI does not name comes from the caller's options.
  ASSERT_EQ(uri.options.limits.fenced.size(), 1u);
  EXPECT_EQ(uri.options.limits.fenced[0].str(), "job.lease");
  // Without a deployment the role is only what the client does.
  EXPECT_EQ(uri.options.role, "handler");
  EXPECT_TRUE(uri.secure_dir.empty());
}

TEST(NatsUriTest, ARequestWaitsAtLeastAMillisecond) {
  EXPECT_EQ(MustParse("nats://h:1?request_ms=0").options.request_ms, 1);
  EXPECT_EQ(MustParse("nats://h:1?chunk_bytes=0").options.chunk_bytes, 0u);
  EXPECT_FALSE(MustParse("nats://h:1?storage=file").options.memory_storage);
}

TEST(NatsUriTest, LocalIsAPrivateServerInMemory) {
  const NatsUri uri = MustParse("nats:local");
  EXPECT_TRUE(uri.local);
  EXPECT_TRUE(uri.options.memory_storage);
  EXPECT_TRUE(uri.options.servers.empty());  // its server's, once it runs
  EXPECT_TRUE(uri.local_dir.empty());        // a new temporary directory

  const NatsUri on_file = MustParse("nats:local?dir=/tmp/store&storage=file&stream=s");
  EXPECT_TRUE(on_file.local);
  EXPECT_FALSE(on_file.options.memory_storage);
  EXPECT_EQ(on_file.local_dir, "/tmp/store");
  EXPECT_EQ(on_file.options.stream, "s");
}

TEST(NatsUriTest, TheDeploymentAndRoleComeFromTheUriOrTheEnvironment) {
  const NatsUri named = MustParse("tls://h:1?secure=/dep&role=manager");
  EXPECT_EQ(named.secure_dir, "/dep");
  EXPECT_EQ(named.options.role, "manager");

  const NatsUriEnvironment env{"/env-dep", "handler"};
  const NatsUri from_env = MustParse("tls://h:1", env);
  EXPECT_EQ(from_env.secure_dir, "/env-dep");
  EXPECT_EQ(from_env.options.role, "handler");

  // The URI's own word wins.
  const NatsUri both = MustParse("nats:local?secure=/dep&role=observer", env);
  EXPECT_TRUE(both.local);
  EXPECT_EQ(both.secure_dir, "/dep");
  EXPECT_EQ(both.options.role, "observer");

  // A process of a deployment that names no role gets the least: an observer's.
  EXPECT_EQ(MustParse("nats://h:1?secure=/dep").options.role, "observer");
  EXPECT_EQ(MustParse("tls://h:1", {"/env-dep", ""}).options.role, "observer");
}

TEST(NatsUriTest, BadUrisAreClearErrors) {
  const std::string long_stream(65, 's');
  struct Case {
    std::string uri;
    std::string says;
    NatsUriEnvironment env = {};
  } cases[] = {
      {"nats", "has no scheme"},
      {"nats://", "expected nats://host:port"},
      {"nats:elsewhere", "expected nats://host:port"},
      {"nats://h:1/path", "expected nats://host:port"},
      {"nats://127.0.0.1", "server '127.0.0.1' is not of the form host:port"},
      {"nats://a:1,,b:2", "server '' is not of the form host:port"},
      {"nats://h:1?secure", "parameter 'secure' is not of the form key=value"},
      {"nats://h:1?storage=disk", "storage='disk' must be 'file' or 'memory'"},
      {"nats://h:1?replicas=0", "replicas=0 must be 1 to 5"},
      {"nats://h:1?replicas=6", "replicas=6 must be 1 to 5"},
      {"nats://h:1?stream=a.b", "stream='a.b' must be 1 to 64 letters"},
      {"nats://h:1?stream=", "stream='' must be 1 to 64 letters"},
      {"nats://h:1?stream=" + long_stream, "must be 1 to 64 letters"},
      {"nats://h:1?strem=x", "unknown parameter 'strem'"},
      {"nats://h:1?dir=/tmp", "unknown parameter 'dir'"},  // nats:local's only
      {"nats:local?port=3", "unknown parameter 'port'"},
      {"nats://h:1?max_total_bytes=lots", "max_total_bytes='lots' is not a non-negative integer"},
      {"nats://h:1?request_ms=-1", "request_ms='-1' is not a non-negative integer"},
      {"nats://h:1?dedupe_ms=10", "dedupe_ms=10 must be at least 1000"},
      {"nats://h:1?chunk_bytes=10", "chunk_bytes=10 must be at least 1024"},
      {"tls://h:1", "tls:// needs the deployment's files: secure=DIR"},
      {"nats://h:1?role=boss", "role='boss' is not a role"},
      {"nats://h:1", "role='admin' is not a role", {"", "admin"}},
  };
  for (const Case& c : cases) {
    auto parsed = ParseNatsUri(c.uri, {}, c.env);
    ASSERT_FALSE(parsed.ok()) << c.uri;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << c.uri;
    EXPECT_NE(parsed.status().message().find(c.says), std::string::npos)
        << c.uri << ": " << parsed.status().message();
    // Every error names the URI it is about.
    EXPECT_NE(parsed.status().message().find(c.uri), std::string::npos)
        << c.uri << ": " << parsed.status().message();
  }
}

}  // namespace
}  // namespace acan::nats
