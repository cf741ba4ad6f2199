#include "runtime/manager/grain.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "nn/plan.h"
#include "runtime/manager/probe.h"

namespace acan::runtime {

Result<ChainGrain> ChooseChainGrain(Space* space, const Layout& layout, const JobConfig& job,
                                    const nn::Dataset& data, const nn::Model& init,
                                    double overhead) {
  ACAN_ASSIGN_OR_RETURN(nn::Plan one, nn::Plan::Create(job, 1, data.rows));
  std::vector<nn::KeyedTensor> state = one.InitialState(init);
  // One mini-batch's compute: the probe's chain task, three times.
  nn::Batcher batcher(&data, one.step_batch(), job.data.shuffle, job.train.seed);
  const nn::Batch batch = batcher.Get(0);
  std::vector<double> step_ns;
  for (int i = 0; i < 3; ++i) {
    std::unordered_map<std::string, std::vector<float>> tensors(state.begin(), state.end());
    const Env& env = *Env::Default();
    ProbeStep(
        one, 0, batch, std::move(tensors), env, env.Now() + std::chrono::seconds(10),
        [] { return true; },
        [&](const nn::TaskSpec&, std::chrono::nanoseconds took) {
          step_ns.push_back(double(took.count()));
        });
  }
  if (step_ns.empty()) return Status::Internal("the chain probe timed no task");
  std::sort(step_ns.begin(), step_ns.end());
  // The model through the space: every shard put, then every one read, then erased.
  const auto start = Clock::now();
  // Keys of this measurement alone: two managers of a new job may measure at once.
  const uint64_t token = std::random_device{}() ^ uint64_t(start.time_since_epoch().count());
  std::vector<Key> keys;
  for (size_t i = 0; i < state.size(); ++i) {
    ACAN_ASSIGN_OR_RETURN(Key key,
                          Key::Parse(fmt::format("{}.m.grain.r{}.s{}", layout.job(), token, i)));
    ACAN_RETURN_IF_ERROR(space->Put(key, Value::FromVector(std::vector<float>(state[i].second))));
    keys.push_back(std::move(key));
  }
  for (const Key& key : keys) {
    ACAN_ASSIGN_OR_RETURN(auto back, space->Read(key));
    if (!back.has_value()) {
      return Status::DataLoss(fmt::format("'{}' was put and cannot be read back", key.str()));
    }
  }
  const auto moved = Clock::now();
  for (const Key& key : keys) (void)space->Erase(key);
  ChainGrain g;
  g.step_ms = step_ns[step_ns.size() / 2] / 1e6;
  g.move_ms = std::chrono::duration<double, std::milli>(moved - start).count();
  g.overhead = overhead;
  const int64_t fewest = nn::Plan::ChainSteps(job, data.rows);
  const int64_t epoch = batcher.BatchesPerEpoch();  // of one mini-batch a step
  const double wanted = std::ceil(2 * g.move_ms / (overhead * std::max(g.step_ms, 1e-3)));
  g.steps = std::clamp<int64_t>(static_cast<int64_t>(wanted), std::min(fewest, epoch), epoch);
  return g;
}

}  // namespace acan::runtime
