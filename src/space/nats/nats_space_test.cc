// The NATS JetStream space against a real nats-server on loopback (test_server.h): the space
// contract (the conformance suite), values larger than a message, torn values, clients sharing a
// space, nats:local, a server restart, and clear errors for bad URIs.
#include "space/nats/nats_space.h"

#include <linux/tcp.h>
#include <nats/nats.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <thread>

#include "acan/testing/space_conformance.h"
#include "space/testing/test_server.h"

namespace acan::testing {
namespace {

struct NatsFactory {
  static Result<std::unique_ptr<Space>> Open(const SpaceOptions& options) {
    return OpenSpace(nats::testing::NewSpaceUri(), options);
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(Nats, SpaceConformance, NatsFactory);

// The same contract on file storage (what nats:local uses).
struct NatsFileFactory {
  static Result<std::unique_ptr<Space>> Open(const SpaceOptions& options) {
    return OpenSpace(nats::testing::NewSpaceUri("storage=file"), options);
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(NatsFile, SpaceConformance, NatsFileFactory);

}  // namespace
}  // namespace acan::testing

namespace acan::nats {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Raw libnats, independent of the code under test: how many messages a stream holds, and a
// purge that simulates a server losing data.
class RawJetStream {
 public:
  explicit RawJetStream(const std::string& url) {
    EXPECT_EQ(natsConnection_ConnectTo(&nc_, url.c_str()), NATS_OK);
    EXPECT_EQ(natsConnection_JetStream(&js_, nc_, nullptr), NATS_OK);
  }
  ~RawJetStream() {
    jsCtx_Destroy(js_);
    natsConnection_Destroy(nc_);
  }
  uint64_t Messages(const std::string& stream) {
    return WithInfo(stream, UINT64_MAX, [](const jsStreamInfo& si) { return si.State.Msgs; });
  }
  // The stream's de-duplication window; 0 when there is no such stream.
  std::chrono::nanoseconds Duplicates(const std::string& stream) {
    return WithInfo(stream, std::chrono::nanoseconds{}, [](const jsStreamInfo& si) {
      return std::chrono::nanoseconds{si.Config->Duplicates};
    });
  }
  bool OnFile(const std::string& stream) {
    return WithInfo(stream, false,
                    [](const jsStreamInfo& si) { return si.Config->Storage == js_FileStorage; });
  }
  void Purge(const std::string& stream, const std::string& subject) {
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Purge.Subject = subject.c_str();
    EXPECT_EQ(js_PurgeStream(js_, stream.c_str(), &o, nullptr), NATS_OK);
  }
  // Publishes `data` on `subject` (stored by whichever stream holds it).
  void Publish(const std::string& subject, const std::string& data) {
    EXPECT_EQ(
        js_Publish(nullptr, js_, subject.c_str(), data.data(), int(data.size()), nullptr, nullptr),
        NATS_OK);
  }
  // The first message on `subject` in `stream` (its bytes), and deletes it when `remove`.
  std::string First(const std::string& stream, const std::string& subject, bool remove) {
    natsMsg* msg = nullptr;
    jsDirectGetMsgOptions dg;
    jsDirectGetMsgOptions_Init(&dg);
    dg.Sequence = 1;
    dg.NextBySubject = subject.c_str();
    if (js_DirectGetMsg(&msg, js_, stream.c_str(), nullptr, &dg) != NATS_OK) return "";
    std::string data(natsMsg_GetData(msg), size_t(natsMsg_GetDataLength(msg)));
    if (remove) {
      const char* seq = nullptr;
      natsMsgHeader_Get(msg, "Nats-Sequence", &seq);
      EXPECT_EQ(js_DeleteMsg(js_, stream.c_str(), std::stoull(seq), nullptr, nullptr), NATS_OK);
    }
    natsMsg_Destroy(msg);
    return data;
  }
  // The subjects `stream` holds messages on, under `filter`.
  std::vector<std::string> Subjects(const std::string& stream, const std::string& filter) {
    jsOptions o;
    jsOptions_Init(&o);
    o.Stream.Info.SubjectsFilter = filter.c_str();
    jsStreamInfo* si = nullptr;
    std::vector<std::string> out;
    if (js_GetStreamInfo(&si, js_, stream.c_str(), &o, nullptr) != NATS_OK) return out;
    if (si->State.Subjects != nullptr) {
      for (int i = 0; i < si->State.Subjects->Count; ++i) {
        out.push_back(si->State.Subjects->List[i].Subject);
      }
    }
    jsStreamInfo_Destroy(si);
    return out;
  }

 private:
  // `read` of the stream's info, or `missing` when there is no such stream.
  template <typename T, typename Read>
  T WithInfo(const std::string& stream, T missing, Read read) {
    jsStreamInfo* si = nullptr;
    if (js_GetStreamInfo(&si, js_, stream.c_str(), nullptr, nullptr) != NATS_OK) return missing;
    T value = read(*si);
    jsStreamInfo_Destroy(si);
    return value;
  }

  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

std::unique_ptr<Space> MustOpen(const std::string& uri, const SpaceOptions& options = {}) {
  auto s = OpenSpace(uri, options);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

Value Pattern(size_t size, uint8_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * 131 + seed);
  return Value::FromVector(std::move(bytes));
}

bool SameBytes(const Value& a, const Value& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

TEST(NatsSpaceTest, ValuesLargerThanAMessageAreSplitAndReassembled) {
  const std::string stream = testing::UniqueStream("big");
  auto space = MustOpen(testing::TestServer().url() + "?stream=" + stream + "&storage=memory");
  const size_t chunk = dynamic_cast<NatsSpace&>(*space).chunk_bytes();
  RawJetStream raw(testing::TestServer().url());
  // One byte under, at and over a chunk, and a 784x1024 float layer (3.2 MB, four chunks).
  for (size_t size : {chunk - 1, chunk, chunk + 1, size_t{784} * 1024 * 4}) {
    SCOPED_TRACE(size);
    Value v = Pattern(size, static_cast<uint8_t>(size));
    ASSERT_TRUE(space->Put("param.w", v).ok());
    auto read = space->Read("param.w");
    ASSERT_TRUE(read.ok() && read->has_value()) << read.status().ToString();
    EXPECT_TRUE(SameBytes((*read)->value, v));
    EXPECT_EQ(space->Stats().bytes, size);
    EXPECT_EQ(raw.Messages(stream + "_c_param"), size > chunk ? (size + chunk - 1) / chunk : 0);
    auto taken = space->Get("param.w", Deadline::After(5s));
    ASSERT_TRUE(taken.ok()) << taken.status().ToString();
    EXPECT_TRUE(SameBytes(taken->value, v));
    EXPECT_EQ(raw.Messages(stream + "_t_param"), 0u);
    EXPECT_EQ(raw.Messages(stream + "_c_param"), 0u) << "the taker removes the chunks";
  }
}

// What this process's TCP sockets have received (TCP_INFO's tcpi_bytes_received, summed over
// its open sockets): the bytes that came over the wire, counted by the kernel, not by acan or
// libnats.
uint64_t BytesReceivedByThisProcess() {
  uint64_t total = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (ec || target.rfind("socket:", 0) != 0) continue;
    const int fd = std::stoi(entry.path().filename().string());
    tcp_info info{};
    socklen_t size = sizeof(info);
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &size) == 0 &&
        size >= offsetof(tcp_info, tcpi_bytes_received) + sizeof(info.tcpi_bytes_received)) {
      total += info.tcpi_bytes_received;
    }
  }
  return total;
}

// Keys alone cross the wire: a chunked value's bytes are not fetched, so a look for which
// versions exist is cheap.
TEST(NatsSpaceTest, ReadKeysLeavesChunkedValuesOnTheServer) {
  const std::string stream = testing::UniqueStream("keys");
  auto space = MustOpen(testing::TestServer().url() + "?stream=" + stream + "&storage=memory");
  const size_t big = 4 * dynamic_cast<NatsSpace&>(*space).chunk_bytes();
  for (const char* k : {"param.w.v1", "param.w.v2", "param.b.v1"}) {
    ASSERT_TRUE(space->Put(k, Pattern(big, 7)).ok());
  }
  const uint64_t before = BytesReceivedByThisProcess();
  auto keys = space->ReadKeys(Pattern::Parse("param.w.*").value());
  const uint64_t for_keys = BytesReceivedByThisProcess() - before;
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0].str(), "param.w.v1");
  EXPECT_EQ((*keys)[1].str(), "param.w.v2");
  EXPECT_LT(for_keys, big / 4) << "received " << for_keys << " bytes for two keys";
  // The measure sees values when they do come: a read of both brings their bytes.
  auto all = space->ReadAll("param.w.*");
  ASSERT_TRUE(all.ok());
  EXPECT_GE(BytesReceivedByThisProcess() - before - for_keys, 2 * big);
}

TEST(NatsSpaceTest, ATornValueIsNeverReturned) {
  const std::string stream = testing::UniqueStream("torn");
  auto space = MustOpen(testing::TestServer().url() + "?stream=" + stream + "&storage=memory");
  RawJetStream raw(testing::TestServer().url());
  ASSERT_TRUE(space->Put("param.w", Pattern(3 << 20, 1)).ok());
  raw.Purge(stream + "_c_param", stream + ".c.param.*.*.1");  // the server lost the second chunk
  auto read = space->Read("param.w");
  EXPECT_EQ(read.status().code(), StatusCode::kDataLoss) << read.status().ToString();
  EXPECT_NE(read.status().message().find("torn"), std::string::npos) << read.status().message();
  EXPECT_EQ(space->ReadAll("param.>").status().code(), StatusCode::kDataLoss);
  auto taken = space->Get("param.w", Deadline::After(5s));
  EXPECT_EQ(taken.status().code(), StatusCode::kDataLoss) << taken.status().ToString();
  EXPECT_NE(taken.status().message().find("chunk 1 of 4"), std::string::npos)
      << taken.status().message();
}

// A chunked value is bound to its tuple by the SHA-256 the tuple carries: a chunk written later
// on the same subject is not read (the first message is the writer's), and chunks that do not
// hash to the digest (the writer's chunk gone, another in its place) are refused as tampered,
// never returned, by reads and takes alike. Raw libnats plays the forger.
TEST(NatsSpaceTest, ChunksThatAreNotTheWritersAreRefused) {
  const std::string stream = testing::UniqueStream("forge");
  auto space = MustOpen(testing::TestServer().url() + "?stream=" + stream +
                        "&storage=memory&chunk_bytes=1024");
  RawJetStream raw(testing::TestServer().url());
  const Value v = Pattern(4000, 7);
  ASSERT_TRUE(space->Put("job.t.x", v).ok());
  const std::string chunks = stream + "_c_job";
  const std::vector<std::string> subjects = raw.Subjects(chunks, stream + ".c.job.m.>");
  ASSERT_EQ(subjects.size(), 4u) << "4000 bytes in chunks of 1024, under the manager's subjects";
  const std::string first = subjects[0].substr(0, subjects[0].rfind('.')) + ".0";
  // A forged chunk 0 after the writer's: not read.
  std::string forged = raw.First(chunks, first, false);
  ASSERT_EQ(forged.size(), 1024u);
  forged[5] ^= 1;
  raw.Publish(first, forged);
  auto read = space->Read("job.t.x");
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status().ToString();
  EXPECT_TRUE(SameBytes((*read)->value, v));
  // The writer's chunk 0 gone, the forged one in its place: refused.
  raw.First(chunks, first, true);
  read = space->Read("job.t.x");
  EXPECT_TRUE(IsTampered(read.status())) << read.status().ToString();
  EXPECT_NE(read.status().message().find(stream + ".c.job.m."), std::string::npos)
      << "names the chunks' subjects: " << read.status().message();
  EXPECT_EQ(space->Stats().tampered, 1u);
  auto taken = space->Take("job.t.x", 1, Deadline::After(5s));
  EXPECT_TRUE(IsTampered(taken.status())) << taken.status().ToString();
  EXPECT_FALSE(space->Read("job.t.x")->has_value()) << "the take removed the tuple";
  EXPECT_EQ(raw.Messages(chunks), 0u) << "and its chunks, the forged ones too";
}

// A key's first token is its namespace, with streams of its own; patterns that start with a
// wildcard look in every namespace; a namespace without streams reads as empty, at once.
TEST(NatsSpaceTest, EachNamespaceHasStreamsOfItsOwn) {
  const std::string stream = testing::UniqueStream("ns");
  auto space = MustOpen(testing::TestServer().url() + "?stream=" + stream + "&storage=memory");
  RawJetStream raw(testing::TestServer().url());
  ASSERT_TRUE(space->Put("a.x", Value::FromString("1")).ok());
  ASSERT_TRUE(space->Put("b.x", Value::FromString("2")).ok());
  ASSERT_TRUE(space->Put("b", Value::FromString("3")).ok());
  EXPECT_EQ(raw.Messages(stream + "_t_a"), 1u);
  EXPECT_EQ(raw.Messages(stream + "_t_b"), 2u);
  EXPECT_EQ(space->ReadAll("*.x")->size(), 2u);
  EXPECT_EQ(space->ReadAll(">")->size(), 3u);
  EXPECT_EQ(space->Stats().tuples, 3u);
  EXPECT_EQ(space->Erase(Pattern::Parse("b.>").value()).value_or(99), 1u);
  EXPECT_EQ(raw.Messages(stream + "_t_a"), 1u) << "another namespace is untouched";
  const auto start = Clock::now();
  EXPECT_FALSE(space->Read("none.x")->has_value());
  EXPECT_EQ(space->ReadCell(Key::Parse("none.c").value())->revision, 0u);
  EXPECT_EQ(space->Take("none.x", 1, Deadline::After(100ms)).status().code(), StatusCode::kTimeout);
  EXPECT_LT(Clock::now() - start, 3s) << "no request waits for a stream that is not there";
  EXPECT_EQ(raw.Messages(stream + "_t_none"), UINT64_MAX) << "reads make no streams";
}

// A handler writes its chunks under its own subjects, and removes what it takes or erases by
// deleting single messages (never a purge, which its role may not do in a secure deployment).
TEST(NatsSpaceTest, AHandlerTakesAndErasesByDeleting) {
  const std::string stream = testing::UniqueStream("hdl");
  const std::string url =
      testing::TestServer().url() + "?stream=" + stream + "&storage=memory&chunk_bytes=1024";
  auto manager = MustOpen(url);
  auto handler = MustOpen(url + "&role=handler");
  RawJetStream raw(testing::TestServer().url());
  ASSERT_TRUE(manager->Put("job.task.a", Value::FromString("t")).ok());  // makes the streams
  const Value v = Pattern(3000, 3);
  ASSERT_TRUE(handler->Put("job.t.y", v).ok());
  EXPECT_EQ(raw.Subjects(stream + "_c_job", stream + ".c.job.h.>").size(), 3u);
  auto got = handler->Get("job.t.y", Deadline::After(5s));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_TRUE(SameBytes(got->value, v));
  EXPECT_EQ(raw.Messages(stream + "_c_job"), 0u) << "the handler deleted the chunks it took";
  ASSERT_TRUE(handler->Put("job.t.y", v).ok());
  ASSERT_TRUE(handler->Put("job.claim.a.h1", Value::FromString("c")).ok());
  EXPECT_EQ(handler->Erase(Pattern::Parse("job.t.>").value()).value_or(99), 1u);
  EXPECT_EQ(handler->Erase(Pattern::Parse("job.claim.a.*").value()).value_or(99), 1u);
  EXPECT_EQ(raw.Messages(stream + "_c_job"), 0u);
  EXPECT_EQ(raw.Messages(stream + "_t_job"), 1u) << "the task alone is left";
  // A handler makes no streams: a namespace nobody made is an error that says so.
  Status s = handler->Put("other.t.z", Value::FromString("z"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("its job's manager"), std::string::npos) << s.message();
}

// A getter of one client, already waiting, gets another client's put; what the second client
// puts the first one reads.
TEST(NatsSpaceTest, TwoClientsShareOneSpace) {
  const std::string uri = testing::NewSpaceUri();
  auto a = MustOpen(uri);
  auto b = MustOpen(uri);
  std::string got;
  std::thread getter([&] {
    auto t = b->Get("task.*", Deadline::After(60s));
    got = t.ok() ? std::string(t->value.AsString()) : t.status().ToString();
  });
  // Put only once the getter has looked, found nothing and waits (or a minute has passed: then
  // the check below fails).
  for (int i = 0; i < 60000 && b->Stats().waiting == 0; ++i) std::this_thread::sleep_for(1ms);
  const uint64_t waiting = b->Stats().waiting;
  ASSERT_TRUE(a->Put("task.1", Value::FromString("from a")).ok());
  getter.join();
  EXPECT_EQ(waiting, 1u) << "the put was made before the getter waited";
  EXPECT_EQ(got, "from a");
  ASSERT_TRUE(b->Put("result.1", Value::FromString("from b")).ok());
  auto all = a->ReadAll("result.>");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].value.AsString(), "from b");
  EXPECT_EQ(a->Stats().tuples, 1u);
}

// Another client's puts reach a watcher in the order the server got them, inline values with
// their bytes, chunked ones only counted; puts outside the pattern are not seen.
TEST(NatsSpaceTest, WatchPutsSeesEveryClientsPutsInOrder) {
  const std::string uri = testing::NewSpaceUri();
  auto watcher = MustOpen(uri);
  auto writer = MustOpen(uri);
  std::mutex mu;
  std::vector<std::pair<std::string, std::string>> seen;
  ASSERT_TRUE(dynamic_cast<NatsSpace&>(*watcher)
                  .WatchPuts(acan::Pattern::Parse("job.>").value(),
                             [&](const Key& k, const Value& v) {
                               std::lock_guard lock(mu);
                               seen.emplace_back(k.str(), std::string(v.AsString()));
                             })
                  .ok());
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(
        writer->Put("job.u.w.s" + std::to_string(i), Value::FromString(std::to_string(i))).ok());
  }
  ASSERT_TRUE(writer->Put("other.x", Value::FromString("not watched")).ok());
  const size_t chunk = dynamic_cast<NatsSpace&>(*writer).chunk_bytes();
  ASSERT_TRUE(writer->Put("job.p.big.v1", Pattern(chunk + 1, 3)).ok());
  ASSERT_TRUE(writer->Put("job.last", Value::FromString("end")).ok());
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard lock(mu);
      if (seen.size() >= 51) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 51u);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(seen[i].first, "job.u.w.s" + std::to_string(i));
    EXPECT_EQ(seen[i].second, std::to_string(i));
  }
  EXPECT_EQ(seen[50].first, "job.last");
  EXPECT_EQ(dynamic_cast<NatsSpace&>(*watcher).watch_chunked(), 1u);
  EXPECT_EQ(dynamic_cast<NatsSpace&>(*watcher).watch_dropped(), 0u);
}

// Fenced puts between clients of one server: a writer whose fence's cell another client swapped
// is refused even on its fast path (its last fenced put primed the expected sequence); another
// client's write elsewhere in the fenced stream costs a look, not a refusal; a watcher sees the
// stored fenced puts and never a refused one (the server republishes only what it stored); a key
// outside the fenced patterns cannot be put fenced.
TEST(NatsSpaceTest, FencedPutsAreCheckedByTheServerAcrossClients) {
  const std::string uri = testing::NewSpaceUri();
  SpaceOptions options;
  for (const char* p : {"job.p.>", "job.m.lease", "job.m.other"}) {
    options.fenced.push_back(acan::Pattern::Parse(p).value());
  }
  auto a = MustOpen(uri, options);
  auto b = MustOpen(uri, options);
  auto watcher = MustOpen(uri, options);
  std::mutex mu;
  std::vector<std::string> seen;
  ASSERT_TRUE(dynamic_cast<NatsSpace&>(*watcher)
                  .WatchPuts(acan::Pattern::Parse("job.>").value(),
                             [&](const Key& k, const Value&) {
                               std::lock_guard lock(mu);
                               seen.push_back(k.str());
                             })
                  .ok());
  const Key lease = Key::Parse("job.m.lease").value();
  const Key other = Key::Parse("job.m.other").value();
  const uint64_t r1 = a->SwapCell(lease, Value::FromString("a"), 0, Deadline::After(5s)).value();
  auto put = [](Space& s, const char* key, uint64_t revision, const Key& cell) {
    return s.PutFenced(Key::Parse(key).value(), Value::FromString(key), {cell, revision},
                       Deadline::After(5s));
  };
  ASSERT_TRUE(put(*a, "job.p.w.v1", r1, lease).ok());
  // b writes another cell of the fenced stream: a's next put looks again and goes on.
  ASSERT_TRUE(b->SwapCell(other, Value::FromString("b"), 0, Deadline::After(5s)).ok());
  ASSERT_TRUE(put(*a, "job.p.w.v2", r1, lease).ok());
  ASSERT_TRUE(put(*a, "job.p.w.v3", r1, lease).ok());  // the fast path
  // b takes the lease: a's put from its old revision is refused by the server.
  const uint64_t r2 = b->SwapCell(lease, Value::FromString("b"), r1, Deadline::After(5s)).value();
  const Status refused = put(*a, "job.p.w.v4", r1, lease);
  ASSERT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused.ToString();
  EXPECT_NE(refused.message().find("revision " + std::to_string(r2)), std::string::npos)
      << refused.ToString();
  ASSERT_TRUE(put(*b, "job.p.w.v4", r2, lease).ok());
  ASSERT_TRUE(b->Put("job.last", Value::FromString("end")).ok());
  EXPECT_EQ(a->Read("job.p.w.v4").value().value().value.AsString(), "job.p.w.v4");
  EXPECT_EQ(a->ReadAll("job.p.>").value().size(), 4u);
  EXPECT_EQ(a->Stats().tuples, 5u);
  const Status outside = a->PutFenced(Key::Parse("job.task.x").value(), Value::FromString("x"),
                                      {lease, r2}, Deadline::After(5s));
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument) << outside.ToString();
  // A marker put into the fenced stream after the refused put had its answer: the watcher gets
  // the fenced stream's puts in the order the server stored them, so once it has the marker, a
  // refused put that the server had stored would be in `seen` already.
  ASSERT_TRUE(put(*b, "job.p.w.marker", r2, lease).ok());
  auto seen_all = [&] {
    std::lock_guard lock(mu);
    return std::count(seen.begin(), seen.end(), "job.p.w.marker") == 1 &&
           std::count(seen.begin(), seen.end(), "job.last") == 1;
  };
  for (int i = 0; i < 6000 && !seen_all(); ++i) std::this_thread::sleep_for(10ms);
  std::lock_guard lock(mu);
  std::vector<std::string> sorted = seen;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"job.last", "job.p.w.marker", "job.p.w.v1",
                                              "job.p.w.v2", "job.p.w.v3", "job.p.w.v4"}));
}

TEST(NatsSpaceTest, BadUrisAreClearErrors) {
  const std::string url = testing::TestServer().url();
  struct Case {
    std::string uri;
    std::string says;
  } cases[] = {
      {"nats://", "expected nats://host:port"},
      {"nats:elsewhere", "expected nats://host:port"},
      {url + "?storage=disk", "storage='disk'"},
      {url + "?replicas=0", "replicas=0"},
      {url + "?stream=a.b", "stream='a.b'"},
      {url + "?strem=x", "unknown parameter 'strem'"},
      {url + "?max_total_bytes=lots", "max_total_bytes='lots'"},
      {"nats://127.0.0.1", "not of the form host:port"},
      {"nats:local?port=3", "unknown parameter 'port'"},
      {url + "?dedupe_ms=10", "dedupe_ms=10 must be at least 1000"},
  };
  for (const Case& c : cases) {
    auto s = OpenSpace(c.uri);
    ASSERT_FALSE(s.ok()) << c.uri;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << c.uri;
    EXPECT_NE(s.status().message().find(c.says), std::string::npos) << s.status().message();
  }
}

// The server remembers each publish's message id for the streams' de-duplication window, in
// memory: acan makes its streams with 30 s (JetStream's default is 2 minutes), or `dedupe_ms`.
// Cells (the audit log) and the fenced tuples (versions, state, lease) are on file even when the
// tuples are in memory.
TEST(NatsSpaceTest, StreamsAreMadeWithTheDedupeWindowAndCellsOnFile) {
  const std::string url = testing::TestServer().url();
  auto plain = MustOpen(url + "?stream=dedupe_default");
  auto shorter = MustOpen(url + "?stream=dedupe_short&dedupe_ms=5000&storage=memory");
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(shorter, nullptr);
  ASSERT_TRUE(plain->Put("k", Pattern(8, 1)).ok());
  ASSERT_TRUE(shorter->Put("k", Pattern(8, 2)).ok());
  RawJetStream raw(url);
  for (const char* suffix : {"_t_k", "_c_k", "_cf_k", "_r_k", "_f_k"}) {
    EXPECT_EQ(raw.Duplicates(std::string("dedupe_default") + suffix), 30s) << suffix;
    EXPECT_EQ(raw.Duplicates(std::string("dedupe_short") + suffix), 5s) << suffix;
    EXPECT_TRUE(raw.OnFile(std::string("dedupe_default") + suffix)) << suffix;
    const std::string kind = suffix;
    EXPECT_EQ(raw.OnFile(std::string("dedupe_short") + suffix),
              kind == "_r_k" || kind == "_f_k" || kind == "_cf_k")
        << suffix;
  }
}

// A list of servers (a cluster's): the client connects to one that answers, here the second.
TEST(NatsSpaceTest, AListOfServersConnectsToOneThatAnswers) {
  const std::string url = testing::TestServer().url();  // nats://127.0.0.1:PORT
  const std::string host_port = url.substr(std::string("nats://").size());
  auto space = OpenSpace("nats://127.0.0.1:1," + host_port +
                         "?storage=memory&stream=" + testing::UniqueStream("list"));
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  ASSERT_TRUE((*space)->Put("k", Value::FromString("v")).ok());
  EXPECT_EQ((*space)->Read("k").value()->value.AsString(), "v");
}

TEST(NatsSpaceTest, AnUnreachableServerIsAClearError) {
  auto s = OpenSpace("nats://127.0.0.1:1");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(s.status().message().find("cannot connect to NATS at 'nats://127.0.0.1:1'"),
            std::string::npos)
      << s.status().message();
}

TEST(NatsSpaceTest, LocalStartsAPrivateServerAndStopsItWithTheSpace) {
  const fs::path dir = fs::temp_directory_path() / testing::UniqueStream("acan-local-test-");
  fs::remove_all(dir);
  pid_t pid = -1;
  {
    auto space = MustOpen("nats:local?dir=" + dir.string());
    ASSERT_TRUE(space);
    LocalNatsServer* server = dynamic_cast<NatsSpace&>(*space).server();
    ASSERT_NE(server, nullptr);
    pid = server->pid();
    EXPECT_EQ(kill(pid, 0), 0);
    ASSERT_TRUE(space->Put("a.b", Value::FromString("x")).ok());
    EXPECT_TRUE(fs::exists(dir / "jetstream")) << "the store is in the run directory";
    // Another client reaches the same space by the server's URL.
    auto other = MustOpen(server->url());
    EXPECT_EQ((*other->Read("a.b"))->value.AsString(), "x");
  }
  EXPECT_EQ(kill(pid, 0), -1) << "the server stops with the space";
  fs::remove_all(dir);
}

TEST(NatsSpaceTest, AServerRestartLosesNoTupleAndWaitersCarryOn) {
  LocalServerOptions options;
  options.store_dir =
      (fs::temp_directory_path() / testing::UniqueStream("acan-restart-test-")).string();
  options.remove_store = true;
  fs::remove_all(options.store_dir);
  auto server = LocalNatsServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto space = MustOpen((*server)->url() + "?storage=file");
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(space->Put("kept." + std::to_string(i), Value()).ok());
  (*server)->Kill();  // SIGKILL: no clean shutdown
  std::string got;
  std::thread getter([&] {
    auto t = space->Get("later.*", Deadline::After(60s));
    got = t.ok() ? t->key.str() : t.status().ToString();
  });
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE((*server)->Restart().ok());
  ASSERT_TRUE(space->Put("later.1", Value::FromString("after the restart")).ok());
  getter.join();
  EXPECT_EQ(got, "later.1");
  auto kept = space->ReadAll("kept.*");
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->size(), 10u);
}

}  // namespace
}  // namespace acan::nats
