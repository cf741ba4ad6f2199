#include "runtime/handler/handler.h"

#include <fmt/format.h>
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <thread>

#include "common/byte_size.h"
#include "common/kill_point.h"
#include "nn/executor.h"
#include "nn/plan.h"
#include "runtime/core/budget.h"
#include "runtime/core/messages.h"

namespace acan::runtime {

Handler::Handler(Space* space, Layout layout, HandlerSettings options, HandlerStats* stats)
    : space_(space),
      layout_(std::move(layout)),
      options_(std::move(options)),
      workspace_(WorkspaceBytes(options_.memory)),
      stats_(stats),
      env_(options_.env ? options_.env : Env::Default()) {
  stats_->memory_budget.store(options_.memory);
}

std::vector<Pattern> Handler::Patterns(bool exact) const {
  std::vector<Pattern> out;
  const int c = options_.size_class;
  if (exact && (c < 0 || c + 1 >= options_.size_classes)) return out;  // nothing to prefer
  if (options_.capabilities.empty()) out.push_back(layout_.AnyTaskPattern(c, exact));
  for (nn::TaskType t : options_.capabilities) out.push_back(layout_.TaskPattern(t, c, exact));
  return out;
}

Status Handler::PutClaim(const Key& claim_key, std::chrono::nanoseconds lease, bool replace) {
  ACAN_RETURN_IF_ERROR(
      space_->Put(claim_key, Value::FromVector(std::vector<int64_t>{
                                 options_.incarnation, env_->WallNs() + lease.count()})));
  if (replace) (void)space_->Take(claim_key, 1, Deadline::Now());  // the oldest: the previous one
  return Status::Ok();
}

Status Handler::Announce() {
  const Key key = layout_.Alive(options_.id);
  auto old = space_->Take(key, 16, Deadline::Now());
  if (!old.ok() && !old.status().IsTimeout()) return old.status();
  ACAN_RETURN_IF_ERROR(space_->Put(
      key, EncodeAliveMessage({options_.incarnation, std::max<int64_t>(0, options_.memory)})));
  spdlog::info("handler {} (incarnation {}{}) joined the job", options_.id, options_.incarnation,
               options_.memory > 0 ? ", memory budget " + HumanBytes(double(options_.memory)) : "");
  if (options_.incarnation > 1) {
    // Back after a crash: tell the manager at once, through the channel it waits on, that any
    // claim of an earlier incarnation of ours is dead.
    ACAN_RETURN_IF_ERROR(PutRestartNotice(space_, layout_, options_.id));
  }
  return Status::Ok();
}

void Handler::Run(const std::atomic<bool>& stop) {
  const std::vector<Pattern> patterns = Patterns(false);
  // A handler of a job cut in tile bands: its own size class first (tasks only its budget and
  // larger ones hold), looked at without waiting, then every class it holds (a wait on one
  // pattern).
  const std::vector<Pattern> preferred = Patterns(true);
  size_t next = 0;
  Clock::time_point next_until_check = env_->Now();
  while (!stop.load(std::memory_order_relaxed)) {
    int pouch = options_.pouch ? std::max(1, options_.pouch->load(std::memory_order_relaxed)) : 1;
    // One capability: block on it. Several (MIMD): look at each in turn without blocking, then
    // block briefly on the next one, so no type starves.
    Result<std::vector<Tuple>> got = Status::Timeout("");
    const Clock::time_point waiting_since = env_->Now();
    for (size_t i = 0; i < preferred.size() && !got.ok(); ++i) {
      got = space_->Take(preferred[i], pouch, Deadline::Now());
    }
    if (!got.ok() && patterns.size() == 1) {
      got = space_->Take(patterns[0], pouch, Deadline::After(options_.poll));
    } else if (!got.ok()) {
      for (size_t i = 0; i < patterns.size() && !got.ok(); ++i) {
        got = space_->Take(patterns[(next + i) % patterns.size()], pouch, Deadline::Now());
      }
      if (!got.ok() && got.status().IsTimeout()) {
        got = space_->Take(patterns[next], pouch, Deadline::After(std::chrono::milliseconds(2)));
      }
      next = (next + 1) % patterns.size();
    }
    stats_->idle_ns.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(env_->Now() - waiting_since).count());
    if (!got.ok()) {
      if (got.status().IsCancelled()) return;
      // The job may be over: asked at most once a poll period (an MIMD handler's takes return
      // every few milliseconds).
      if (options_.until && env_->Now() >= next_until_check) {
        if (options_.until()) return;
        next_until_check = env_->Now() + options_.poll;
      }
      continue;
    }
    if (stop.load(std::memory_order_relaxed)) {
      // Stopped while waiting: a crashed processor takes nothing, so what the wait returned goes
      // back untouched for the others.
      for (const Tuple& t : *got) (void)space_->Put(t.key, t.value);
      return;
    }
    KillPoint("take");
    std::vector<Result<TaskMessage>> pouch_msgs;
    pouch_msgs.reserve(got->size());
    for (const Tuple& t : *got) pouch_msgs.push_back(DecodeTaskMessage(t.value));
    // Tasks sent again first: a lost task's redo is what its step has waited on longest, and
    // behind a pouch of a slow processor it waited seconds (measured: p95 1.2 s from the kill to
    // the redo in the robustness experiment across processes, the redo in hand 25 ms).
    std::vector<size_t> order(got->size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_partition(order.begin(), order.end(), [&](size_t i) {
      return pouch_msgs[i].ok() && pouch_msgs[i]->attempt > 1;
    });
    if (!std::is_sorted(order.begin(), order.end())) {
      std::vector<Tuple> tuples;
      std::vector<Result<TaskMessage>> msgs;
      for (size_t i : order) {
        tuples.push_back(std::move((*got)[i]));
        msgs.push_back(std::move(pouch_msgs[i]));
      }
      *got = std::move(tuples);
      pouch_msgs = std::move(msgs);
    }
    const std::vector<bool> pre_claimed = ClaimPouch(pouch_msgs);
    for (size_t i = 0; i < got->size(); ++i) {
      const Outcome outcome = RunTask((*got)[i], pouch_msgs[i], pre_claimed[i], stop);
      if (outcome == Outcome::kDone) continue;
      // Stopped: the task in hand is lost (or, not started, goes back), the rest of the pouch
      // was never started and goes back for the others, unclaimed.
      for (size_t j = outcome == Outcome::kLost ? i + 1 : i; j < got->size(); ++j) {
        (void)space_->Put((*got)[j].key, (*got)[j].value);
        if (pre_claimed[j])
          (void)space_->Erase(layout_.Claim(pouch_msgs[j]->spec.key, options_.id));
      }
      return;
    }
  }
}

namespace {
// An exponentially weighted mean (0: no sample yet).
void Smooth(double* mean, double sample) {
  *mean = *mean == 0 ? sample : 0.8 * *mean + 0.2 * sample;
}

// CPU time this thread has used, in ms (the kernel's share of a task's wall time: the rest went
// to other threads on its CPU or to the hypervisor).
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) / 1e6;
}
}  // namespace

std::chrono::nanoseconds Handler::InHand(int op) const {
  auto kernel = exec_ns_.find(op), io = io_ns_.find(op);
  if (kernel == exec_ns_.end() || io == io_ns_.end()) return std::chrono::nanoseconds(0);
  return std::chrono::nanoseconds(
      static_cast<int64_t>(env_->SlowDown() * kernel->second + io->second));
}

std::vector<bool> Handler::ClaimPouch(const std::vector<Result<TaskMessage>>& pouch) {
  std::vector<bool> claimed(pouch.size(), false);
  std::chrono::nanoseconds ahead(0);  // expected from the take to the start of task i
  for (size_t i = 0; i < pouch.size(); ++i) {
    if (!pouch[i].ok()) continue;
    const auto in_hand = InHand(static_cast<int>(pouch[i]->spec.op));
    const auto own = in_hand.count() > 0 ? in_hand : std::chrono::nanoseconds(kFirstClaim) / 4;
    // Only where the wait may come near the manager's deadline (a quarter of it): a claim is a
    // write through the space, over a network the larger part of a small task's cost.
    const int64_t timeout_ns = pouch[i]->timeout_ns;
    if (i > 0 && (timeout_ns <= 0 || 4 * ahead.count() > timeout_ns)) {
      const auto lease = std::max<std::chrono::nanoseconds>(kMinClaim, 4 * (ahead + own));
      claimed[i] = PutClaim(layout_.Claim(pouch[i]->spec.key, options_.id), lease, false).ok();
    }
    ahead += own;
  }
  return claimed;
}

Handler::Outcome Handler::RunTask(const Tuple& tuple, const Result<TaskMessage>& decoded,
                                  bool pre_claimed, const std::atomic<bool>& stop) {
  if (stop.load(std::memory_order_relaxed)) return Outcome::kNotStarted;
  if (!decoded.ok()) {
    stats_->bad_tuples.fetch_add(1);
    spdlog::warn("handler {}: dropping task tuple '{}': {}", options_.id, tuple.key.str(),
                 decoded.status().ToString());
    return Outcome::kDone;
  }
  const TaskMessage& m = *decoded;
  const Outcome outcome = RunTask(m, pre_claimed, stop);
  if (outcome == Outcome::kLost) abandoned_.push_back({m.spec.key, m.spec.step});
  return outcome;
}

// A task sent again whose outputs are all in the space already (its report, not its work, was
// lost; or an earlier copy finished meanwhile): nothing to run, only the report to give.
bool Handler::AlreadyDone(const TaskMessage& m) {
  if (m.attempt <= 1) return false;
  for (const std::string& out : m.spec.outputs) {
    auto r = space_->Read(layout_.Output(out, m.spec.step));
    if (!r.ok() || !r->has_value()) return false;
  }
  return true;
}

Handler::Outcome Handler::RunTask(const TaskMessage& m, bool pre_claimed,
                                  const std::atomic<bool>& stop) {
  const auto taken = Clock::now();
  // Only a handler with a budget sizes its tasks (off the path of every other task).
  const int64_t held =
      options_.memory > 0 ? TaskHoldBytes(m.spec) + options_.data_bytes + workspace_ : 0;
  if (held > options_.memory) {
    // Over this handler's budget: refused with why, before anything of it is read.
    stats_->refused.fetch_add(1);
    DoneMessage refusal{m.attempt, options_.id, 0, "", {}};
    refusal.refused = fmt::format(
        "task '{}' needs {} for its inputs and outputs in hand and in flight{}, over handler "
        "{}'s memory budget of {}",
        m.spec.key, HumanBytes(double(held - options_.data_bytes - workspace_)),
        " and " + HumanBytes(double(options_.data_bytes + workspace_)) + " of data and workspace",
        options_.id, HumanBytes(double(options_.memory)));
    Status put = space_->Put(layout_.Done(m.spec.key), EncodeDoneMessage(refusal));
    if (pre_claimed) (void)space_->Erase(layout_.Claim(m.spec.key, options_.id));
    return put.IsCancelled() ? Outcome::kLost : Outcome::kDone;
  }
  if (AlreadyDone(m)) {
    stats_->reused.fetch_add(1);
    DoneMessage done{m.attempt, options_.id, 0, "", {}};
    Status put = space_->Put(layout_.Done(m.spec.key), EncodeDoneMessage(done));
    if (put.ok() && options_.on_reported) options_.on_reported(m.spec.key, 0, done.speed);
    if (pre_claimed) (void)space_->Erase(layout_.Claim(m.spec.key, options_.id));
    return put.IsCancelled() ? Outcome::kLost : Outcome::kDone;
  }
  // Claim it at once, so that from now on a crash here is visible in the space. The claim lasts a
  // few times what this op has been taking here: its kernel (slowed down as we are now) and its
  // reads and writes through the space (over a network, often the larger part).
  const int op = static_cast<int>(m.spec.op);
  const auto lease = [&]() -> std::chrono::nanoseconds {
    const auto in_hand = InHand(op);
    if (in_hand.count() == 0) return kFirstClaim;
    return std::max<std::chrono::nanoseconds>(kMinClaim, 4 * in_hand);
  }();
  const Key claim = layout_.Claim(m.spec.key, options_.id);
  // A claim put when the pouch was taken is replaced (the oldest claim goes).
  if (!PutClaim(claim, lease, pre_claimed).ok()) return Outcome::kLost;
  KillPoint("claim");
  auto claimed_at = env_->Now();
  // Outside the kernel (where the Env renews it) a claim half gone is renewed too, so that reads
  // and writes slower than the hint do not let it lapse while the task is in hand.
  auto keep_claim = [&] {
    if (env_->Now() - claimed_at < lease / 2) return true;
    claimed_at = env_->Now();
    return PutClaim(claim, lease, true).ok();
  };
  if (stop.load(std::memory_order_relaxed)) {
    // Stopped before it began (its death may already have been announced and looked at): as if
    // never taken.
    (void)space_->Erase(claim);
    return Outcome::kNotStarted;
  }
  std::vector<Value> inputs;
  std::vector<std::span<const float>> spans;
  inputs.reserve(m.input_keys.size());
  std::vector<std::string> missing;
  std::string error;  // an input it cannot make: the same on every handler, so the job's end
  for (const std::string& key : m.input_keys) {
    Result<std::optional<Value>> r = std::optional<Value>();  // a reference without data: missing
    if (!LocalInputs::IsRef(key)) {
      auto read = space_->Read(key);
      if (!read.ok()) {
        r = read.status();
      } else if (read->has_value()) {
        r = std::optional<Value>(std::move((*read)->value));
      }
    } else if (options_.local_inputs != nullptr) {
      auto made = options_.local_inputs->Make(key, m.spec.step);
      if (!made.ok()) {
        error = made.status().ToString();
        missing.clear();  // the error is the report
        break;
      }
      r = std::optional<Value>(std::move(made).value());
    }
    if (!r.ok() && r.status().IsCancelled()) return Outcome::kLost;
    if (!r.ok() || !r->has_value()) {
      missing.push_back(key);
      continue;
    }
    inputs.push_back(std::move(**r));
    spans.push_back(inputs.back().As<float>());
  }
  if (!missing.empty() || !error.empty()) {
    // Missing: the step moved on (a late duplicate: the manager ignores the report) or an input
    // was lost on its way into the space: the manager brings it back and sends the task again.
    if (error.empty()) stats_->missing_inputs.fetch_add(1);
    DoneMessage report{m.attempt, options_.id, 0, std::move(error), std::move(missing)};
    Status put = space_->Put(layout_.Done(m.spec.key), EncodeDoneMessage(report));
    if (put.IsCancelled()) return Outcome::kLost;
    (void)space_->Erase(claim);
    return Outcome::kDone;
  }
  if (!keep_claim()) return Outcome::kLost;
  std::vector<std::vector<float>> outputs;
  if (options_.buffers) {
    for (int64_t n : nn::OutputSizes(m.spec)) outputs.push_back(options_.buffers->Get(size_t(n)));
  }
  const auto start = env_->Now();
  const double cpu0 = options_.trace ? ThreadCpuMs() : 0;
  // The Env runs the kernel (and, on a slowed processor, waits out the rest of the task's time,
  // renewing the claim meanwhile).
  int64_t kernel_ns = 0;
  bool claim_lost = false;
  TaskRunContext context;
  context.stop = &stop;
  context.renew_every = lease / 2;
  context.renew = [&] {
    claimed_at = env_->Now();
    claim_lost = !PutClaim(claim, lease, true).ok();
    return !claim_lost;
  };
  context.kernel_ns = &kernel_ns;
  Status s = env_->ExecuteTask(m.spec, spans, &outputs, context);
  KillPoint("kernel");
  {
    // What it held, counted from the values in hand (not from the plan): inputs, outputs, data.
    int64_t in_hand = options_.data_bytes;
    for (const Value& v : inputs) in_hand += int64_t(v.size());
    for (const std::vector<float>& o : outputs) in_hand += int64_t(o.size() * sizeof(float));
    for (int64_t peak = stats_->peak_held.load(); in_hand > peak;) {
      if (stats_->peak_held.compare_exchange_weak(peak, in_hand)) break;
    }
  }
  if (claim_lost) return Outcome::kLost;
  const double cpu_ms = options_.trace ? ThreadCpuMs() - cpu0 : 0;
  Smooth(&exec_ns_[op], double(kernel_ns));
  const int64_t exec_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(env_->Now() - start).count();
  if (stop.load(std::memory_order_relaxed)) {
    stats_->lost_ns.fetch_add(exec_ns);
    return Outcome::kLost;  // crashed mid-task: nothing is reported
  }
  if (!keep_claim()) return Outcome::kLost;
  DoneMessage done{m.attempt, options_.id, exec_ns, "", {}};
  done.speed = env_->SlowDown();
  if (s.ok()) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      Key key = layout_.Output(m.spec.outputs[i], m.spec.step);
      Value value = options_.buffers ? options_.buffers->Wrap(std::move(outputs[i]))
                                     : Value::FromVector(std::move(outputs[i]));
      Status put = space_->Put(std::move(key), std::move(value));
      if (!put.ok()) return put.IsCancelled() ? Outcome::kLost : Outcome::kDone;
    }
    KillPoint("output");
  } else {
    done.error = s.ToString();
  }
  done.in_hand_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - taken).count();
  done.reported_wall_ns = env_->WallNs();
  if (Status put = space_->Put(layout_.Done(m.spec.key), EncodeDoneMessage(done)); !put.ok()) {
    return put.IsCancelled() ? Outcome::kLost : Outcome::kDone;
  }
  if (options_.on_reported) options_.on_reported(m.spec.key, done.exec_ns, done.speed);
  KillPoint("done");
  // From the take to the report, less the kernel: what the claim must also cover.
  const double held_ns = double(std::chrono::nanoseconds(Clock::now() - taken).count());
  Smooth(&io_ns_[op], std::max(0.0, held_ns - double(exec_ns)));
  (void)space_->Erase(claim);
  // The step was cleaned up while this ran (a late copy): what was just written would stay
  // forever, so take it back. The manager closes the step before it removes the step's tuples,
  // so when the step is still open here, its clean-up is yet to come and removes them.
  if (s.ok()) {
    auto open = space_->Read(layout_.StepOpen(m.spec.step));
    if (open.ok() && !open->has_value()) {
      for (const std::string& out : m.spec.outputs) {
        (void)space_->Take(layout_.Output(out, m.spec.step), 1, Deadline::Now());
      }
    }
  }
  if (options_.trace) {
    using std::chrono::duration;
    options_.trace->TaskSlice(TraceRecorder::HandlerLane(options_.id), m.spec.key,
                              nn::ToString(m.spec.op).data(), taken, Clock::now(), m.attempt,
                              duration<double, std::milli>(start - taken).count(),
                              double(exec_ns) / 1e6, cpu_ms);
  }
  if (stats_->tasks.fetch_add(1) == 0) {
    stats_->first_task_at_ns.store(Clock::now().time_since_epoch().count());
  }
  stats_->busy_ns.fetch_add(exec_ns);
  stats_->kernel_ns.fetch_add(kernel_ns);
  const int64_t in_hand_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - taken).count();
  stats_->io_ns.fetch_add(std::max<int64_t>(0, in_hand_ns - exec_ns));
  stats_->work.fetch_add(nn::TaskWork(m.spec));
  // Within a budget, the task's freed buffers go back to the kernel (glibc keeps free heap pages
  // below its top resident): what the process holds from outside follows what it holds.
  if (options_.memory > 0) malloc_trim(0);
  return Outcome::kDone;
}

HandlerFigures ReportOf(int id, const HandlerStats& st) {
  HandlerFigures r;
  r.id = id;
  r.tasks = st.tasks.load();
  r.busy_s = double(st.busy_ns.load()) / 1e9;
  r.kernel_s = double(st.kernel_ns.load()) / 1e9;
  r.io_s = double(st.io_ns.load()) / 1e9;
  r.work = st.work.load();
  r.lost_s = double(st.lost_ns.load()) / 1e9;
  r.idle_s = double(st.idle_ns.load()) / 1e9;
  r.speed = st.speed.load();
  r.crashes = st.crashes.load();
  r.missing_inputs = st.missing_inputs.load();
  r.bad_tuples = st.bad_tuples.load();
  r.reused = st.reused.load();
  r.memory_budget = st.memory_budget.load();
  r.peak_held_bytes = st.peak_held.load();
  r.refused = st.refused.load();
  return r;
}

}  // namespace acan::runtime
