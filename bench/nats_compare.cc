// Space operations over a private nats-server (what nats:local starts) against raw libnats doing
// the same work in the same run (docs/benchmarks.md): put+take pairs of 1 KiB and 1 MiB values
// through the space, against a synchronous JetStream publish, a pull fetch of one message and a
// synchronous ack (the cheapest confirmed hand-over of one message that JetStream offers). The
// two alternate, round by round, so drift of a shared machine hits both; the median ratio is
// printed per size.
//
//   nats_compare [--rounds R] [--seconds S]
#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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

double SpacePairs(Space& space, const Value& value, double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  long pairs = 0;
  const auto start = Clock::now();
  while (Clock::now() < end) {
    if (!space.Put("bench.x", value).ok()) std::exit(1);
    auto t = space.Get("bench.*", Deadline::After(std::chrono::seconds(5)));
    if (!t.ok() || t->value.size() != value.size()) {
      std::fprintf(stderr, "nats_compare: take failed: %s\n", t.status().ToString().c_str());
      std::exit(1);
    }
    ++pairs;
  }
  return pairs / std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  double seconds = 1.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
  }
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

  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  Check(natsConnection_ConnectTo(&nc, url.c_str()), "connect");
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
  natsSubscription* sub = nullptr;
  Check(js_PullSubscribe(&sub, js, "raw.>", "raw-worker", nullptr, nullptr, nullptr),
        "pull subscribe");

  auto space = OpenSpace(url + "?stream=bench");
  if (!space.ok()) {
    std::fprintf(stderr, "nats_compare: %s\n", space.status().ToString().c_str());
    return 1;
  }
  for (size_t size : {size_t{1024}, size_t{1} << 20}) {
    const std::string payload(size, 'x');
    const Value value = Value::FromString(payload);
    std::vector<double> raw, ours, ratio;
    RawPairs(js, sub, payload, seconds / 4);  // warm-up
    SpacePairs(**space, value, seconds / 4);
    for (int r = 0; r < rounds; ++r) {
      raw.push_back(RawPairs(js, sub, payload, seconds));
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
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return 0;
}
