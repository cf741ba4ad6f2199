#include "runtime/job_runner.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <thread>

#include "nn/plan.h"
#include "runtime/handler.h"
#include "runtime/manager.h"

namespace acan::runtime {

namespace {

// Runs managers in one slot: a manager that crashes is replaced by a new one (a new incarnation
// with no local state) after a short delay, until the job is finished or the run stops.
class ManagerSlot {
 public:
  ManagerSlot(int id, Space* space, const Layout& layout, const nn::JobConfig& job,
              const nn::Dataset& data, const RunOptions& options, std::atomic<bool>* finished,
              std::atomic<bool>* stop_all, std::atomic<bool>* killed_once)
      : id_(id), space_(space), layout_(layout), job_(job), data_(data), options_(options),
        finished_(finished), stop_all_(stop_all), killed_once_(killed_once) {}

  void Start() { thread_ = std::thread([this] { Loop(); }); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  void Crash() { crash_.store(true); }
  void Stop() { crash_.store(true); }
  int64_t crashes() const { return crashes_.load(); }
  Status status() const {
    std::lock_guard lock(mu_);
    return status_;
  }
  std::map<std::string, double> timeouts_ms() const {
    std::lock_guard lock(mu_);
    return timeouts_ms_;
  }

 private:
  void Loop() {
    while (!finished_->load() && !stop_all_->load()) {
      ManagerOptions mo;
      mo.owner = fmt::format("manager-{}", id_);
      mo.window = options_.window;
      mo.task_size = options_.task_size;
      mo.lease = options_.lease;
      mo.controller = options_.controller;
      mo.on_step = [this](const Progress& p) {
        if (options_.on_progress) options_.on_progress(p);
        if (options_.kill_manager_after_step >= 0 &&
            p.next_step >= options_.kill_manager_after_step && !killed_once_->exchange(true)) {
          crash_.store(true);
        }
      };
      Manager manager(space_, layout_, &job_, &data_, mo);
      Status s = manager.Run(crash_);
      {
        std::lock_guard lock(mu_);
        timeouts_ms_ = manager.TimeoutsMs();
      }
      if (s.ok()) {
        finished_->store(true);
        return;
      }
      if (s.IsCancelled() && !finished_->load() && !stop_all_->load()) {
        crashes_.fetch_add(1);
        crash_.store(false);
        std::this_thread::sleep_for(options_.manager_restart_delay);
        continue;
      }
      if (!s.IsCancelled() && !s.IsUnavailable()) {
        std::lock_guard lock(mu_);
        status_ = s;
        stop_all_->store(true);
      }
      return;
    }
  }

  int id_;
  Space* space_;
  const Layout& layout_;
  const nn::JobConfig& job_;
  const nn::Dataset& data_;
  const RunOptions& options_;
  std::atomic<bool>* finished_;
  std::atomic<bool>* stop_all_;
  std::atomic<bool> crash_{false};
  std::atomic<bool>* killed_once_;  // the test hook kills one manager per run
  std::atomic<int64_t> crashes_{0};
  mutable std::mutex mu_;
  Status status_;
  std::map<std::string, double> timeouts_ms_;
  std::thread thread_;
};

}  // namespace

Result<RunResult> RunJob(const nn::JobConfig& job, const nn::Dataset& data, const nn::Model& init,
                         const RunOptions& options) {
  if (options.handlers < 1) return Status::InvalidArgument("handlers must be at least 1");
  if (options.window < 1) return Status::InvalidArgument("window must be at least 1");
  ACAN_ASSIGN_OR_RETURN(std::unique_ptr<Space> space, OpenSpace(options.space_uri));
  if (options.wrap_space) space = options.wrap_space(std::move(space));
  ACAN_ASSIGN_OR_RETURN(Key token, Key::Parse(options.job_token));
  Layout layout(token.str());
  ACAN_RETURN_IF_ERROR(Manager::InitJob(space.get(), layout, job, init));

  const auto start = Clock::now();
  std::atomic<bool> finished{false}, stop_all{false}, killed_once{false};
  std::atomic<int> pouch{options.pouch};
  std::vector<std::unique_ptr<HandlerStats>> stats;
  std::vector<std::thread> handlers;
  std::atomic<bool> stop_handlers{false};
  for (int h = 0; h < options.handlers; ++h) {
    stats.push_back(std::make_unique<HandlerStats>());
    HandlerOptions ho;
    ho.id = h;
    if (size_t(h) < options.capabilities.size()) ho.capabilities = options.capabilities[h];
    ho.pouch = &pouch;
    handlers.emplace_back([&, ho, h] {
      Handler handler(space.get(), layout, ho, stats[h].get());
      handler.Run(stop_handlers);
    });
  }
  std::vector<std::unique_ptr<ManagerSlot>> slots;
  for (int m = 0; m < (options.standby ? 2 : 1); ++m) {
    slots.push_back(std::make_unique<ManagerSlot>(m, space.get(), layout, job, data, options,
                                                  &finished, &stop_all, &killed_once));
    slots.back()->Start();
  }
  // The first slot to finish sets `finished`; the standby then gives up waiting for the lease.
  while (!finished.load() && !stop_all.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (auto& s : slots) s->Stop();
  for (auto& s : slots) s->Join();
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  stop_handlers.store(true);
  for (auto& t : handlers) t.join();

  for (auto& s : slots) ACAN_RETURN_IF_ERROR(s->status());
  RunResult result;
  result.wall_s = wall_s;
  ACAN_ASSIGN_OR_RETURN(result.progress, Manager::ReadProgress(space.get(), layout));
  ACAN_ASSIGN_OR_RETURN(nn::Plan plan, nn::Plan::Create(job, result.progress.task_size));
  const int64_t final_version = result.progress.total_steps;
  Status missing;
  result.model = plan.ModelFromState([&](const std::string& key) {
    auto t = space->Read(layout.State(key, final_version));
    if (!t.ok() || !t->has_value()) {
      missing = Status::DataLoss(fmt::format("final version {} of '{}' is not in the space",
                                             final_version, key));
      return std::vector<float>();
    }
    auto v = (*t)->value.As<float>();
    return std::vector<float>(v.begin(), v.end());
  });
  ACAN_RETURN_IF_ERROR(missing);
  for (int h = 0; h < options.handlers; ++h) {
    HandlerReport r;
    r.id = h;
    r.tasks = stats[h]->tasks.load();
    r.busy_s = double(stats[h]->busy_ns.load()) / 1e9;
    r.lost_s = double(stats[h]->lost_ns.load()) / 1e9;
    r.idle_ratio = wall_s > 0 ? std::max(0.0, 1.0 - (r.busy_s + r.lost_s) / wall_s) : 0;
    r.speed = stats[h]->speed.load();
    r.crashes = stats[h]->crashes.load();
    r.missing_inputs = stats[h]->missing_inputs.load();
    result.handlers.push_back(r);
  }
  for (auto& s : slots) {
    result.manager_crashes += s->crashes();
    for (auto& [k, v] : s->timeouts_ms()) result.timeouts_ms[k] = v;
  }
  result.pouch = pouch.load();
  result.space = space->Stats();
  space->Close();
  return result;
}

}  // namespace acan::runtime
