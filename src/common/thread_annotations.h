// Compiler-checked locking: clang's thread-safety attributes, and the mutex, scoped lock and
// condition variable that carry them. A field marked GUARDED_BY(mu_) may only be touched with
// mu_ held, a function marked REQUIRES(mu_) only called with it held; clang's -Wthread-safety
// (on in the clang builds, an error there: CMakeLists.txt) checks every access and call. On other
// compilers the attributes expand to nothing. The shape is LevelDB's port/thread_annotations.h
// and port::Mutex/CondVar, and Abseil's absl::Mutex.
//
// std::mutex cannot be checked (libstdc++ does not annotate it), so shared state is guarded by
// acan::Mutex: a std::mutex with the annotations, every method inline, so it costs what a
// std::mutex costs. The analysis is per function: a lambda that touches guarded state is
// analysed on its own, so it says REQUIRES(mu_) itself (a predicate for a wait is a loop
// instead: `while (!ready_) cv_.Wait(mu_);`). Mutex, MutexLock and CondVar are thread-safe in
// the sense of std::mutex and std::condition_variable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define ACAN_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define ACAN_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (CAPABILITY("mutex")), or an RAII holder of one (SCOPED_CAPABILITY).
#define CAPABILITY(x) ACAN_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY ACAN_THREAD_ANNOTATION(scoped_lockable)
// A field read or written only with the lock held; PT_: the data it points to.
#define GUARDED_BY(x) ACAN_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) ACAN_THREAD_ANNOTATION(pt_guarded_by(x))
// Lock order: this lock is taken before / after the others.
#define ACQUIRED_BEFORE(...) ACAN_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) ACAN_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
// The caller holds the lock (exclusively / at least shared) / does not hold it.
#define REQUIRES(...) ACAN_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) ACAN_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) ACAN_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// The function takes / lets go of the lock (no argument: `this`, in a lock's own methods).
#define ACQUIRE(...) ACAN_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) ACAN_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) ACAN_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) ACAN_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
// Takes the lock when it returns the first argument.
#define TRY_ACQUIRE(...) ACAN_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// Checks at run time that the lock is held; the analysis takes it as held afterwards.
#define ASSERT_CAPABILITY(x) ACAN_THREAD_ANNOTATION(assert_capability(x))
// Returns the lock (for accessors).
#define RETURN_CAPABILITY(x) ACAN_THREAD_ANNOTATION(lock_returned(x))
// Turns the analysis off in one function: for what it cannot follow, with a comment saying why.
#define NO_THREAD_SAFETY_ANALYSIS ACAN_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace acan {

class CondVar;

// A std::mutex the analysis can follow. Not recursive.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the lock is held where it cannot see it taken (checks nothing at run
  // time: std::mutex does not know its owner).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for a scope (std::lock_guard).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// A std::condition_variable waited on with an acan::Mutex held: each wait releases the mutex
// while it blocks and holds it again when it returns, as std::condition_variable's do. Spurious
// wake-ups happen: wait in a loop on the condition.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still held: the caller's
  }
  // std::cv_status::timeout when `until` passed before a notification.
  template <typename Clock, typename Duration>
  std::cv_status WaitUntil(Mutex& mu, const std::chrono::time_point<Clock, Duration>& until)
      REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const std::cv_status s = cv_.wait_until(lock, until);
    lock.release();
    return s;
  }
  template <typename Rep, typename Period>
  std::cv_status WaitFor(Mutex& mu, const std::chrono::duration<Rep, Period>& d) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const std::cv_status s = cv_.wait_for(lock, d);
    lock.release();
    return s;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace acan
