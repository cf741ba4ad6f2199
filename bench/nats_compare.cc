// Space operations over a private nats-server (what nats:local starts) against raw libnats doing
// the same work in the same run (docs/benchmarks.md): put+take pairs of 1 KiB and 1 MiB values
// through the space, against a synchronous JetStream publish, a pull fetch of one message and a
// synchronous ack (the cheapest confirmed hand-over of one message that JetStream offers). The
// two alternate, round by round, so drift of a shared machine hits both; the median ratio is
// printed per size.
//
// With --secure DIR (a deployment made by `acan secure init DIR`), it measures instead what TLS
// costs: the same pairs in plain text against TLS, alternating, first raw libnats on a server
// with the deployment's TLS and no users, then the space on nats:local against
// nats:local?secure=DIR (TLS with client certificates, the manager's role and permissions).
//
//   nats_compare [--rounds R] [--seconds S] [--secure DIR]
#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "acan/space.h"
#include "space/nats/local_server.h"

using namespace acan;
using Clock = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void Check(natsStatus s, const char* what) {
  if (s != NATS_OK) {
    std::fprintf(stderr, "nats_compare: %s: %s\n", what, natsStatus_GetText(s));
    std::exit(1);
  }
}

// Raw libnats: publish, fetch, ack; pairs per second over `seconds`.
double RawPairs(jsCtx* js, natsSubscription* sub, const std::string& payload, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  long pairs = 0;
  const auto start = Clock::now();
  while (Clock::now() < end) {
    jsPubAck* ack = nullptr;
    Check(js_Publish(&ack, js, "raw.x", payload.data(), static_cast<int>(payload.size()), nullptr,
                     nullptr),
          "publish");
    jsPubAck_Destroy(ack);
    natsMsgList list = {nullptr, 0};
    Check(natsSubscription_Fetch(&list, sub, 1, 5000, nullptr), "fetch");
    for (int i = 0; i < list.Count; ++i)
      Check(natsMsg_AckSync(list.Msgs[i], nullptr, nullptr), "ack");
    natsMsgList_Destroy(&list);
    ++pairs;
  }
  return pairs / std::chrono::duration<double>(Clock::now() - start).count();
}

double SpacePairs(Space& space, const Value& value, double seconds, const char* key = "bench.x",
                  const char* pattern = "bench.*") {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  long pairs = 0;
  const auto start = Clock::now();
  while (Clock::now() < end) {
    if (!space.Put(key, value).ok()) std::exit(1);
    auto t = space.Get(pattern, Deadline::After(std::chrono::seconds(5)));
    if (!t.ok() || t->value.size() != value.size()) {
      std::fprintf(stderr, "nats_compare: take failed: %s\n", t.status().ToString().c_str());
      std::exit(1);
    }
    ++pairs;
  }
  return pairs / std::chrono::duration<double>(Clock::now() - start).count();
}

// A connection to `url` with a JetStream context, the work-queue stream raw.> and a pull consumer
// on it: raw libnats' side of the comparison. `credentials` for a TLS server.
struct RawClient {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  natsSubscription* sub = nullptr;
  RawClient(const std::string& url, const nats::RoleCredentials* credentials) {
    natsOptions* opts = nullptr;
    Check(natsOptions_Create(&opts), "options");
    Check(natsOptions_SetURL(opts, url.c_str()), "url");
    if (credentials && !nats::ApplyCredentials(opts, *credentials).ok()) Check(NATS_ERR, "tls");
    Check(natsConnection_Connect(&nc, opts), "connect");
    natsOptions_Destroy(opts);
    Check(natsConnection_JetStream(&js, nc, nullptr), "jetstream");
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    const char* subjects[] = {"raw.>"};
    cfg.Name = "raw";
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Retention = js_WorkQueuePolicy;
    Check(js_AddStream(nullptr, js, &cfg, nullptr, nullptr), "add stream");
    Check(js_PullSubscribe(&sub, js, "raw.>", "raw-worker", nullptr, nullptr, nullptr),
          "pull subscribe");
  }
  ~RawClient() {
    natsSubscription_Destroy(sub);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
};

void PrintTlsRatio(const char* what, size_t size, const std::vector<double>& p,
                   const std::vector<double>& t) {
  std::vector<double> ratio;
  for (size_t i = 0; i < p.size(); ++i) ratio.push_back(p[i] / t[i]);
  std::printf(
      "%s, %7zu B values: plain %.0f pairs/s, TLS %.0f pairs/s, time a pair TLS / plain %.3f "
      "(median of %zu rounds; min %.3f max %.3f)\n",
      what, size, Median(p), Median(t), Median(ratio), ratio.size(),
      *std::min_element(ratio.begin(), ratio.end()), *std::max_element(ratio.begin(), ratio.end()));
}

// Plain against TLS, alternating round by round: raw libnats on a server with the deployment's
// TLS and no users (what TLS costs NATS itself), then the space on nats:local against
// nats:local?secure=DIR as the manager (TLS and the role's permissions).
int CompareTls(const std::string& secure_dir, int rounds, double seconds) {
  auto credentials = nats::LoadRoleCredentials(secure_dir, "manager");
  if (!credentials.ok()) {
    std::fprintf(stderr, "nats_compare: %s\n", credentials.status().ToString().c_str());
    return 1;
  }
  std::vector<std::unique_ptr<nats::LocalNatsServer>> servers;
  for (bool tls : {false, true}) {
    nats::LocalServerOptions options;
    options.store_dir = (std::filesystem::temp_directory_path() /
                         (tls ? "acan-nats-compare-tls" : "acan-nats-compare-plain"))
                            .string();
    options.remove_store = true;
    std::filesystem::remove_all(options.store_dir);
    options.extra_config = nats::kLocalServerConfig;
    if (tls) {
      options.extra_config += "\ntls {\n  cert_file: \"" + secure_dir + "/server.pem\"\n" +
                              "  key_file: \"" + secure_dir + "/server-key.pem\"\n" +
                              "  ca_file: \"" + secure_dir + "/ca.pem\"\n  verify: true\n}\n";
      options.probe_credentials = *credentials;
    }
    auto server = nats::LocalNatsServer::Start(options);
    if (!server.ok()) {
      std::fprintf(stderr, "nats_compare: %s\n", server.status().ToString().c_str());
      return 1;
    }
    servers.push_back(std::move(*server));
  }
  {
    RawClient plain(servers[0]->url(), nullptr), tls(servers[1]->url(), &*credentials);
    for (size_t size : {size_t{1024}, size_t{1} << 20}) {
      const std::string payload(size, 'x');
      std::vector<double> p, t;
      RawPairs(plain.js, plain.sub, payload, seconds / 4);  // warm-up
      RawPairs(tls.js, tls.sub, payload, seconds / 4);
      for (int r = 0; r < rounds; ++r) {
        p.push_back(RawPairs(plain.js, plain.sub, payload, seconds));
        t.push_back(RawPairs(tls.js, tls.sub, payload, seconds));
      }
      PrintTlsRatio("raw libnats", size, p, t);
    }
  }
  auto plain = OpenSpace("nats:local");
  auto secure = OpenSpace("nats:local?secure=" + secure_dir + "&role=manager");
  for (auto* s : {&plain, &secure}) {
    if (!s->ok()) {
      std::fprintf(stderr, "nats_compare: %s\n", s->status().ToString().c_str());
      return 1;
    }
  }
  for (size_t size : {size_t{1024}, size_t{1} << 20}) {
    const Value value = Value::FromString(std::string(size, 'x'));
    std::vector<double> p, t;
    SpacePairs(**plain, value, seconds / 4, "job.x", "job.*");  // warm-up
    SpacePairs(**secure, value, seconds / 4, "job.x", "job.*");
    for (int r = 0; r < rounds; ++r) {
      p.push_back(SpacePairs(**plain, value, seconds, "job.x", "job.*"));
      t.push_back(SpacePairs(**secure, value, seconds, "job.x", "job.*"));
    }
    PrintTlsRatio("acan space", size, p, t);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  double seconds = 1.0;
  std::string secure_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
    if (!std::strcmp(argv[i], "--secure")) secure_dir = argv[i + 1];
  }
  if (!secure_dir.empty()) return CompareTls(secure_dir, rounds, seconds);
  nats::LocalServerOptions options;
  options.store_dir = (std::filesystem::temp_directory_path() / "acan-nats-compare").string();
  options.remove_store = true;
  std::filesystem::remove_all(options.store_dir);
  options.extra_config = nats::kLocalServerConfig;
  auto server = nats::LocalNatsServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "nats_compare: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const std::string url = (*server)->url();
  std::printf("nats-server at %s (file storage, %s)\n", url.c_str(), nats::kLocalServerConfig);

  RawClient client(url, nullptr);

  auto space = OpenSpace(url + "?stream=bench");
  if (!space.ok()) {
    std::fprintf(stderr, "nats_compare: %s\n", space.status().ToString().c_str());
    return 1;
  }
  for (size_t size : {size_t{1024}, size_t{1} << 20}) {
    const std::string payload(size, 'x');
    const Value value = Value::FromString(payload);
    std::vector<double> raw, ours, ratio;
    RawPairs(client.js, client.sub, payload, seconds / 4);  // warm-up
    SpacePairs(**space, value, seconds / 4);
    for (int r = 0; r < rounds; ++r) {
      raw.push_back(RawPairs(client.js, client.sub, payload, seconds));
      ours.push_back(SpacePairs(**space, value, seconds));
      ratio.push_back(ours.back() / raw.back());
    }
    std::printf(
        "%7zu B values: raw libnats %.0f pairs/s, acan space %.0f pairs/s, ratio %.2f (median of "
        "%d rounds; min %.2f max %.2f)\n",
        size, Median(raw), Median(ours), Median(ratio), rounds,
        *std::min_element(ratio.begin(), ratio.end()),
        *std::max_element(ratio.begin(), ratio.end()));
  }
  space->reset();
  return 0;
}
