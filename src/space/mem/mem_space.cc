#include "space/mem/mem_space.h"

#include <fmt/format.h>

#include <map>
#include <thread>

#include "space/cell_internal.h"
#include "space/space_wrapper.h"
#include "space/uri_internal.h"

namespace acan::mem {

MemSpace::MemSpace(std::string uri, SpaceOptions options)
    : uri_(std::move(uri)), options_(options) {}

MemSpace::~MemSpace() { Close(); }

Status MemSpace::CancelledStatus() const {
  return Status::Cancelled(fmt::format("space '{}' is closed", uri_));
}

std::shared_ptr<MemSpace::Waiter> MemSpace::ThreadWaiter() {
  thread_local std::shared_ptr<Waiter> cached;
  if (!cached || cached.use_count() > 1) cached = std::make_shared<Waiter>();
  cached->signaled = false;
  return cached;
}

void MemSpace::LinkWaiterLocked(Waiter* w) {
  w->prev = waiters_tail_;
  w->next = nullptr;
  (waiters_tail_ ? waiters_tail_->next : waiters_head_) = w;
  waiters_tail_ = w;
}

void MemSpace::UnlinkWaiterLocked(Waiter* w) {
  (w->prev ? w->prev->next : waiters_head_) = w->next;
  (w->next ? w->next->prev : waiters_tail_) = w->prev;
  w->prev = w->next = nullptr;
}

Status MemSpace::Put(Key key, Value value, Deadline deadline) {
  return PutChecked(std::move(key), std::move(value), nullptr, deadline);
}

Status MemSpace::PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) {
  return PutChecked(std::move(key), std::move(value), &fence, deadline);
}

Status MemSpace::PutChecked(Key key, Value value, const Fence* fence, Deadline deadline) {
  const auto start = Clock::now();
  const size_t size = value.size();
  auto done = [&](Status s) {
    stats_.Record(SpaceOp::kPut, start, s);
    return s;
  };
  if (size > options_.max_value_bytes) {
    return done(Status::ResourceExhausted(
        fmt::format("value for key '{}' is {} bytes, over the space's max_value_bytes of {}",
                    key.str(), size, options_.max_value_bytes)));
  }
  std::shared_ptr<Waiter> to_wake;
  {
    MutexLock lock(mu_);
    if (closed_) return done(CancelledStatus());
    const size_t max_total = options_.max_total_bytes;
    if (max_total != 0 && bytes_ + size > max_total) {
      if (size > max_total) {
        return done(Status::ResourceExhausted(
            fmt::format("value for key '{}' is {} bytes, over the space's max_total_bytes of {}",
                        key.str(), size, max_total)));
      }
      ++room_waiters_;
      while (!closed_ && bytes_ + size > max_total) {
        if (deadline.infinite()) {
          room_.Wait(mu_);
        } else if (room_.WaitUntil(mu_, deadline.at()) == std::cv_status::timeout &&
                   bytes_ + size > max_total) {
          --room_waiters_;
          return done(Status::ResourceExhausted(fmt::format(
              "space '{}' is full ({} of max_total_bytes {} in use); put of {} bytes for key "
              "'{}' waited until its deadline",
              uri_, bytes_, max_total, size, key.str())));
        }
      }
      --room_waiters_;
      if (closed_) return done(CancelledStatus());
    }
    if (fence != nullptr) {  // under the lock that stores the tuple: no swap comes in between
      auto it = cells_.find(fence->cell.str());
      const uint64_t found = it == cells_.end() ? 0 : it->second.revision;
      if (found != fence->revision) {
        return done(FenceMoved(key, *fence, uri_, RevisionWords(found)));
      }
    }
    bytes_ += size;
    stats_.CountBytes(size, 0);
    puts_.fetch_add(1, std::memory_order_release);
    to_wake = SignalWaiterLocked(key);
    index_.Insert(Tuple{std::move(key), std::move(value)});
  }
  if (to_wake) to_wake->cv.Signal();
  return done(Status::Ok());
}

std::shared_ptr<MemSpace::Waiter> MemSpace::SignalWaiterLocked(const Key& key) {
  for (Waiter* w = waiters_head_; w != nullptr; w = w->next) {
    if (!w->signaled && w->pattern->Matches(key)) {
      w->signaled = true;
      return w->shared_from_this();
    }
  }
  return nullptr;
}

namespace {
// How long a getter that found nothing watches for a put before it blocks. A wake-up through
// the kernel costs a context switch on each side; a put that comes within a few microseconds is
// picked up without one. At most half the cores spin at once (none on a single core): with more
// waiting threads than cores, spinning would only take the CPU from the threads doing the work.
const int kMaxSpinners = static_cast<int>(std::thread::hardware_concurrency() / 2);
std::atomic<int> g_spinners{0};

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}
}  // namespace

template <typename TryTake>
Status MemSpace::WaitAndTake(const Pattern& pattern, Deadline deadline, SpaceOp op,
                             TryTake try_take) {
  bool spun = false;
  for (;;) {
    if (closed_) return CancelledStatus();
    if (size_t n = try_take(); n > 0) {
      if (room_waiters_ > 0) room_.SignalAll();
      stats_.CountTaken(n);
      return Status::Ok();
    }
    if (deadline.expired()) {
      return Status::Timeout(
          fmt::format("{}: no tuple matching '{}' in space '{}' before the deadline",
                      SpaceOpName(op), pattern.str(), uri_));
    }
    if (!spun && options_.spin > 0 &&
        g_spinners.fetch_add(1, std::memory_order_relaxed) < kMaxSpinners) {
      spun = true;
      const uint64_t seen = puts_.load(std::memory_order_relaxed);
      mu_.Unlock();
      for (size_t i = 0; i < options_.spin && puts_.load(std::memory_order_acquire) == seen; ++i) {
        CpuRelax();
      }
      g_spinners.fetch_sub(1, std::memory_order_relaxed);
      mu_.Lock();
      if (puts_.load(std::memory_order_relaxed) != seen) continue;
    } else if (!spun && options_.spin > 0) {
      g_spinners.fetch_sub(1, std::memory_order_relaxed);
    }
    std::shared_ptr<Waiter> w = ThreadWaiter();
    w->pattern = &pattern;
    LinkWaiterLocked(w.get());
    ++waiting_;
    while (!w->signaled && !closed_) {
      if (deadline.infinite()) {
        w->cv.Wait(mu_);
      } else if (w->cv.WaitUntil(mu_, deadline.at()) == std::cv_status::timeout) {
        break;
      }
      ++wakeups_;
    }
    --waiting_;
    UnlinkWaiterLocked(w.get());
    spun = false;
    // Signalled, closed or timed out: the loop looks once more before giving up.
  }
}

Result<Tuple> MemSpace::Get(const Pattern& pattern, Deadline deadline) {
  const auto start = Clock::now();
  std::optional<Tuple> got;
  Status s;
  {
    MutexLock lock(mu_);
    s = WaitAndTake(pattern, deadline, SpaceOp::kGet, [&]() REQUIRES(mu_) -> size_t {
      got = index_.TakeOne(pattern);
      if (!got) return 0;
      bytes_ -= got->value.size();
      stats_.CountBytes(0, got->value.size());
      return 1;
    });
  }
  stats_.Record(SpaceOp::kGet, start, s);
  if (!s.ok()) return s;
  return std::move(*got);
}

Result<std::vector<Tuple>> MemSpace::Take(const Pattern& pattern, size_t max_count,
                                          Deadline deadline) {
  const auto start = Clock::now();
  if (max_count == 0) {
    Status s = Status::InvalidArgument(fmt::format(
        "take from '{}' with pattern '{}': max_count must be at least 1", uri_, pattern.str()));
    stats_.Record(SpaceOp::kTake, start, s);
    return s;
  }
  std::vector<Tuple> got;
  Status s;
  {
    MutexLock lock(mu_);
    s = WaitAndTake(pattern, deadline, SpaceOp::kTake, [&]() REQUIRES(mu_) -> size_t {
      size_t n = index_.TakeOldest(pattern, max_count, &got);
      for (const Tuple& t : got) {
        bytes_ -= t.value.size();
        stats_.CountBytes(0, t.value.size());
      }
      return n;
    });
  }
  stats_.Record(SpaceOp::kTake, start, s);
  if (!s.ok()) return s;
  return got;
}

Result<std::optional<Tuple>> MemSpace::Read(const Pattern& pattern) {
  const auto start = Clock::now();
  MutexLock lock(mu_);
  if (closed_) {
    stats_.Record(SpaceOp::kRead, start, CancelledStatus());
    return CancelledStatus();
  }
  std::optional<Tuple> out;
  if (const Tuple* t = index_.FindOldest(pattern)) {
    out = *t;
    stats_.CountBytes(0, t->value.size());
  }
  stats_.Record(SpaceOp::kRead, start, Status::Ok());
  return out;
}

Result<std::vector<Tuple>> MemSpace::ReadAll(const Pattern& pattern, size_t limit) {
  const auto start = Clock::now();
  MutexLock lock(mu_);
  if (closed_) {
    stats_.Record(SpaceOp::kReadAll, start, CancelledStatus());
    return CancelledStatus();
  }
  std::vector<Tuple> out = index_.ReadAll(pattern, limit);
  for (const Tuple& t : out) stats_.CountBytes(0, t.value.size());
  stats_.Record(SpaceOp::kReadAll, start, Status::Ok());
  return out;
}

Result<std::vector<Key>> MemSpace::ReadKeys(const Pattern& pattern, size_t limit) {
  const auto start = Clock::now();
  MutexLock lock(mu_);
  if (closed_) {
    stats_.Record(SpaceOp::kReadKeys, start, CancelledStatus());
    return CancelledStatus();
  }
  std::vector<Key> out;
  for (Tuple& t : index_.ReadAll(pattern, limit)) out.push_back(std::move(t.key));
  stats_.Record(SpaceOp::kReadKeys, start, Status::Ok());
  return out;
}

Result<Cell> MemSpace::ReadCell(const Key& key) {
  const auto start = Clock::now();
  Cell out;
  {
    MutexLock lock(mu_);
    if (closed_) {
      stats_.Record(SpaceOp::kReadCell, start, CancelledStatus());
      return CancelledStatus();
    }
    if (auto it = cells_.find(key.str()); it != cells_.end()) out = it->second;
  }
  stats_.CountBytes(0, out.value.size());
  stats_.Record(SpaceOp::kReadCell, start, Status::Ok());
  return out;
}

Result<uint64_t> MemSpace::SwapCell(const Key& key, Value value, uint64_t expected, Deadline) {
  const auto start = Clock::now();
  auto swap = [&]() -> Result<uint64_t> {
    ACAN_RETURN_IF_ERROR(CheckCellValue(key, value, uri_));
    MutexLock lock(mu_);
    if (closed_) return CancelledStatus();
    auto it = cells_.find(key.str());
    const uint64_t found = it == cells_.end() ? 0 : it->second.revision;
    if (found != expected) {
      return CellMoved(key, expected, uri_, RevisionWords(found));
    }
    stats_.CountBytes(value.size(), 0);
    Cell& cell = cells_[key.str()];
    cell.value = std::move(value);
    cell.revision = ++cell_revision_;
    return cell.revision;
  };
  Result<uint64_t> r = swap();
  stats_.Record(SpaceOp::kSwapCell, start, r.ok() ? Status::Ok() : r.status());
  return r;
}

void MemSpace::Close() {
  MutexLock lock(mu_);
  if (closed_) return;
  closed_ = true;
  for (Waiter* w = waiters_head_; w != nullptr; w = w->next) w->cv.SignalAll();
  room_.SignalAll();
}

SpaceStats MemSpace::Stats() const {
  MutexLock lock(mu_);
  SpaceStats s = stats_.Snapshot(index_.size(), bytes_);
  s.waiting = waiting_;
  s.wakeups = wakeups_;
  return s;
}

namespace {

// A handle on a named in-process space (mem:?name=NAME): every handle of a name shares one
// MemSpace, which lives as long as its last handle. Close() closes the shared space for every
// handle.
class NamedMemSpace final : public SpaceWrapper {
 public:
  NamedMemSpace(std::string uri, std::shared_ptr<MemSpace> shared)
      : SpaceWrapper(shared.get()), uri_(std::move(uri)), shared_(std::move(shared)) {}
  const std::string& uri() const override { return uri_; }

 private:
  std::string uri_;
  std::shared_ptr<MemSpace> shared_;
};

struct NamedSpaces {
  Mutex mu;
  std::map<std::string, std::pair<std::weak_ptr<MemSpace>, SpaceOptions>> by_name GUARDED_BY(mu);
};

NamedSpaces& Named() {
  static NamedSpaces* spaces = new NamedSpaces;  // never destroyed: handles may outlive main
  return *spaces;
}

bool SameOptions(const SpaceOptions& a, const SpaceOptions& b) {
  return a.max_value_bytes == b.max_value_bytes && a.max_total_bytes == b.max_total_bytes &&
         a.spin == b.spin;
}

}  // namespace

Status RegisterMemSpace() {
  return RegisterSpaceScheme(
      "mem", [](std::string_view uri, const SpaceOptions& base) -> Result<std::unique_ptr<Space>> {
        ACAN_ASSIGN_OR_RETURN(SpaceUri parsed, SpaceUri::Parse(uri));
        if (!parsed.authority.empty() || !parsed.path.empty()) {
          return Status::InvalidArgument(fmt::format(
              "space URI '{}': mem: takes no host or path; use 'mem:', 'mem:?name=NAME' (shared "
              "in this process by name) or 'mem:?max_total_bytes=N'",
              uri));
        }
        SpaceOptions options = base;
        ACAN_RETURN_IF_ERROR(parsed.ApplyOptions(&options));
        const std::string* name_param = parsed.Param("name");
        ACAN_RETURN_IF_ERROR(parsed.RejectUnusedParams());
        if (name_param == nullptr) {
          return std::unique_ptr<Space>(new MemSpace(std::string(uri), options));
        }
        // mem:?name=NAME: the same space for every opener of NAME in this process.
        auto name = Key::Parse(*name_param);
        if (!name.ok()) {
          return Status::InvalidArgument(
              fmt::format("space URI '{}': name: {}", uri, name.status().message()));
        }
        NamedSpaces& named = Named();
        MutexLock lock(named.mu);
        auto& [weak, opened_with] = named.by_name[name->str()];
        std::shared_ptr<MemSpace> shared = weak.lock();
        if (shared && !SameOptions(opened_with, options)) {
          return Status::InvalidArgument(fmt::format(
              "space URI '{}': the space named '{}' is open already with other limits; open it "
              "with the same parameters",
              uri, name->str()));
        }
        if (!shared) {
          shared = std::make_shared<MemSpace>("mem:?name=" + name->str(), options);
          weak = shared;
          opened_with = options;
        }
        return std::unique_ptr<Space>(new NamedMemSpace(std::string(uri), std::move(shared)));
      });
}

}  // namespace acan::mem
