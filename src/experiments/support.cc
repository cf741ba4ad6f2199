#include "experiments/support.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace acan::experiments {

std::string MlpJob(int64_t samples, int64_t epochs, int64_t window, int64_t task_size) {
  return fmt::format(R"(
[model]
layers = [784, 256, 256, 10]
activation = "relu"
loss = "softmax_cross_entropy"
[data]
source = "synthetic"
samples = {}
[train]
epochs = {}
batch = 64
lr = 0.05
seed = 42
[partition]
strategy = "data"
task_size = {}
[runtime]
handlers = 3
window = {}
)",
                     samples, epochs, task_size, window);
}

void Claims::Add(const std::string& name, bool holds, const nlohmann::json& figure,
                 const std::string& goal, const std::string& baseline, const std::string& text) {
  std::printf("claim: %s: %s\n", text.c_str(), holds ? "yes" : "NO");
  all_ = all_ && holds;
  list_.push_back({{"name", name},
                   {"figure", figure},
                   {"goal", goal},
                   {"baseline", baseline},
                   {"holds", holds}});
}

Result<int> Finish(const std::string& dir, nlohmann::json record, const Claims& claims) {
  record["claims"] = claims.json();
  record["claims_hold"] = claims.all_hold();
  std::ofstream out(dir + "/experiment.json");
  out << record.dump(2) << "\n";
  if (!out) return Status::Unavailable("cannot write " + dir + "/experiment.json");
  return claims.all_hold() ? 0 : 1;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double Cv(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0, var = 0;
  for (double x : v) mean += x / double(v.size());
  for (double x : v) var += (x - mean) * (x - mean) / double(v.size() - 1);
  return mean != 0 ? std::sqrt(var) / std::abs(mean) : 0;
}

double Pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = double(x.size());
  if (n < 3) return 0;
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

double SteadySamplesPerS(const std::vector<runtime::MetricsRow>& rows) {
  if (rows.size() < 2) return 0;
  const double from = rows.front().t_s + (rows.back().t_s - rows.front().t_s) / 4;
  double samples = 0, time = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    if (rows[i - 1].t_s < from) continue;
    const double dt = rows[i].t_s - rows[i - 1].t_s;
    samples += rows[i].samples_per_s * dt;
    time += dt;
  }
  return time > 0 ? samples / time : 0;
}

nlohmann::json CheckpointRestart::ToJson() const {
  return {{"formula",
           "C/2/M + (checkpoint_s/step_s)/C + (restart_s/step_s)/M, M = interval_steps / "
           "processes, C = sqrt(2 x checkpoint_s/step_s x M) (Young)"},
          {"checkpoint_s", checkpoint_s},
          {"restart_s", restart_s},
          {"step_s", step_s},
          {"interval_steps", interval_steps},
          {"processes", processes},
          {"checkpoint_every_steps", every_steps},
          {"extra_compute_ratio", extra}};
}

CheckpointRestart ScoreCheckpointRestart(double checkpoint_s, double restart_s, double step_s,
                                         double interval_steps, int processes) {
  CheckpointRestart c{checkpoint_s, restart_s, step_s, interval_steps, processes};
  if (step_s <= 0 || interval_steps <= 0 || processes <= 0) return c;
  const double m = interval_steps / processes;  // steps between failures
  const double cost = checkpoint_s / step_s;    // a checkpoint, in steps
  c.every_steps = std::max(1.0, std::sqrt(2 * cost * m));
  c.extra = c.every_steps / 2 / m + cost / c.every_steps + restart_s / step_s / m;
  return c;
}

CheckpointCost MeasureCheckpoint(const nn::Model& model, const std::string& dir) {
  using Seconds = std::chrono::duration<double>;
  const std::string path = dir + "/checkpoint-cost.safetensors";
  std::vector<double> writes, reads;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (!nn::SaveModel(path, model).ok()) break;
    // A checkpoint is worth its name once it is on the disk.
    if (int fd = ::open(path.c_str(), O_RDONLY); fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
    auto t1 = std::chrono::steady_clock::now();
    if (!nn::LoadModel(path, model.widths).ok()) break;
    auto t2 = std::chrono::steady_clock::now();
    writes.push_back(Seconds(t1 - t0).count());
    reads.push_back(Seconds(t2 - t1).count());
  }
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return {Median(writes), Median(reads)};
}

}  // namespace acan::experiments
