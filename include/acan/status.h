// Status and Result<T>: how acan reports expected failures.
//
// Every fallible operation returns a Status (no value) or a Result<T> (a value or a Status).
// Exceptions never cross a module boundary. Messages say what was wrong, where, and what to do.
// Status and Result are plain values: safe to copy and move between threads, not to share a
// single object between threads while one of them writes it.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "acan/export.h"

namespace acan {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kTimeout,
  kCancelled,
  kResourceExhausted,
  kUnavailable,
  kPermissionDenied,
  kDataLoss,
  kAlreadyExists,
  kFailedPrecondition,
  kInternal,
};

// The stable name of a code, e.g. "InvalidArgument".
ACAN_EXPORT std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] ACAN_EXPORT Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "Code: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context` (e.g. a file name).
  Status WithContext(std::string_view context) const;

  bool IsTimeout() const { return code_ == StatusCode::kTimeout; }
  bool IsCancelled() const { return code_ == StatusCode::kCancelled; }
  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  bool IsUnavailable() const { return code_ == StatusCode::kUnavailable; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value of type T, or the Status that explains why there is none.
namespace internal {
// Prints "acan: value() of an error result: <status>" and aborts.
[[noreturn]] ACAN_EXPORT void DieOfStatus(const Status& status);
}  // namespace internal

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const& {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  Status status() && { return ok() ? Status() : std::get<Status>(std::move(v_)); }

  // The value. On an error this is a programmer's mistake: the process aborts with the status
  // on stderr (Arrow's ValueOrDie), never a bad_variant_access far from its cause.
  T& value() & {
    CheckOk();
    return std::get<T>(v_);
  }
  const T& value() const& {
    CheckOk();
    return std::get<T>(v_);
  }
  T&& value() && {
    CheckOk();
    return std::get<T>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T other) const& { return ok() ? value() : std::move(other); }

 private:
  void CheckOk() const {
    if (!ok()) internal::DieOfStatus(std::get<Status>(v_));
  }

  std::variant<Status, T> v_;
};

namespace internal {
inline Status ToStatus(const Status& s) { return s; }
inline Status ToStatus(Status&& s) { return std::move(s); }
template <typename T>
Status ToStatus(const Result<T>& r) {
  return r.status();
}
template <typename T>
Status ToStatus(Result<T>&& r) {
  return std::move(r).status();
}
}  // namespace internal

}  // namespace acan

#define ACAN_CONCAT_INNER_(a, b) a##b
#define ACAN_CONCAT_(a, b) ACAN_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (a Status or Result) is not OK.
#define ACAN_RETURN_IF_ERROR(expr)                                                      \
  do {                                                                                  \
    auto&& acan_status_ = (expr);                                                       \
    if (!acan_status_.ok()) return ::acan::internal::ToStatus(std::move(acan_status_)); \
  } while (0)

#define ACAN_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()

// `lhs = value of expr`, or returns its Status from the enclosing function.
#define ACAN_ASSIGN_OR_RETURN(lhs, expr) \
  ACAN_ASSIGN_OR_RETURN_IMPL_(ACAN_CONCAT_(acan_result_, __LINE__), lhs, expr)
