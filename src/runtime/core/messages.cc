#include "runtime/core/messages.h"

#include <fmt/format.h>

#include <cstring>

namespace acan::runtime {
namespace {

constexpr uint32_t kTaskMagic = 0x41435432;   // "ACT2"
constexpr uint32_t kDoneMagic = 0x41434434;   // "ACD4"
constexpr uint32_t kLeaseMagic = 0x41434c31;  // "ACL1"

class Writer {
 public:
  template <typename T>
  void Pod(T v) {
    size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void Str(std::string_view s) {
    Pod<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  Value Done() { return Value::FromVector(std::move(out_)); }

 private:
  std::vector<char> out_;
};

class Reader {
 public:
  Reader(const Value& v, const char* what) : p_(v.AsString()), what_(what) {}
  template <typename T>
  Status Pod(T* v) {
    if (p_.size() < sizeof(T)) return Truncated();
    std::memcpy(v, p_.data(), sizeof(T));
    p_.remove_prefix(sizeof(T));
    return Status::Ok();
  }
  Status Str(std::string* s) {
    uint32_t n = 0;
    ACAN_RETURN_IF_ERROR(Pod(&n));
    if (p_.size() < n) return Truncated();
    s->assign(p_.substr(0, n));
    p_.remove_prefix(n);
    return Status::Ok();
  }
  // A count of strings to follow: at most `limit`, and no more than the bytes left could hold
  // (each at least its 4-byte length), checked before the caller makes room for them.
  Status Count(uint32_t* n, uint32_t limit, const char* what) {
    ACAN_RETURN_IF_ERROR(Pod(n));
    if (*n > limit || *n > p_.size() / sizeof(uint32_t)) {
      return Status::DataLoss(fmt::format("{} tuple claims {} {} in {} bytes (at most {})", what_,
                                          *n, what, p_.size(), limit));
    }
    return Status::Ok();
  }
  Status Magic(uint32_t want) {
    uint32_t m = 0;
    ACAN_RETURN_IF_ERROR(Pod(&m));
    if (m != want) {
      return Status::DataLoss(
          fmt::format("{} tuple has magic {:#x}, expected {:#x}", what_, m, want));
    }
    return Status::Ok();
  }
  bool AtEnd() const { return p_.empty(); }
  Status End() {
    if (!p_.empty())
      return Status::DataLoss(fmt::format("{} tuple has {} trailing bytes", what_, p_.size()));
    return Status::Ok();
  }

 private:
  Status Truncated() { return Status::DataLoss(fmt::format("{} tuple is truncated", what_)); }
  std::string_view p_;
  const char* what_;
};

}  // namespace

Value EncodeTaskMessage(int32_t attempt, const std::vector<std::string>& input_keys,
                        std::string_view encoded_spec, int64_t timeout_ns) {
  Writer w;
  w.Pod(kTaskMagic);
  w.Pod(attempt);
  w.Pod(timeout_ns);
  w.Pod<uint32_t>(static_cast<uint32_t>(input_keys.size()));
  for (const auto& k : input_keys) w.Str(k);
  w.Str(encoded_spec);
  return w.Done();
}

Result<int32_t> TaskMessageAttempt(const Value& v) {
  Reader r(v, "task");
  int32_t attempt = 0;
  ACAN_RETURN_IF_ERROR(r.Magic(kTaskMagic));
  ACAN_RETURN_IF_ERROR(r.Pod(&attempt));
  return attempt;
}

Result<TaskMessage> DecodeTaskMessage(const Value& v) {
  Reader r(v, "task");
  TaskMessage m;
  ACAN_RETURN_IF_ERROR(r.Magic(kTaskMagic));
  ACAN_RETURN_IF_ERROR(r.Pod(&m.attempt));
  ACAN_RETURN_IF_ERROR(r.Pod(&m.timeout_ns));
  uint32_t n = 0;
  ACAN_RETURN_IF_ERROR(r.Count(&n, 4096, "inputs"));
  m.input_keys.resize(n);
  for (auto& k : m.input_keys) ACAN_RETURN_IF_ERROR(r.Str(&k));
  std::string spec;
  ACAN_RETURN_IF_ERROR(r.Str(&spec));
  ACAN_RETURN_IF_ERROR(r.End());
  ACAN_ASSIGN_OR_RETURN(m.spec, nn::DecodeTask(spec));
  if (m.spec.inputs.size() != m.input_keys.size()) {
    return Status::DataLoss(fmt::format("task tuple for '{}' resolves {} of its {} inputs",
                                        m.spec.key, m.input_keys.size(), m.spec.inputs.size()));
  }
  return m;
}

Value EncodeDoneMessage(const DoneMessage& m) {
  Writer w;
  w.Pod(kDoneMagic);
  w.Pod(m.attempt);
  w.Pod(m.handler);
  w.Pod(m.exec_ns);
  w.Str(m.error);
  w.Pod<uint32_t>(static_cast<uint32_t>(m.missing.size()));
  for (const std::string& k : m.missing) w.Str(k);
  w.Pod(m.in_hand_ns);
  w.Pod(m.reported_wall_ns);
  w.Pod(m.speed);
  if (!m.refused.empty()) w.Str(m.refused);  // absent from a report that ran
  return w.Done();
}

Result<DoneMessage> DecodeDoneMessage(const Value& v) {
  Reader r(v, "done");
  DoneMessage m;
  ACAN_RETURN_IF_ERROR(r.Magic(kDoneMagic));
  ACAN_RETURN_IF_ERROR(r.Pod(&m.attempt));
  ACAN_RETURN_IF_ERROR(r.Pod(&m.handler));
  ACAN_RETURN_IF_ERROR(r.Pod(&m.exec_ns));
  ACAN_RETURN_IF_ERROR(r.Str(&m.error));
  uint32_t n = 0;
  ACAN_RETURN_IF_ERROR(r.Count(&n, 4096, "missing inputs"));
  m.missing.resize(n);
  for (auto& k : m.missing) ACAN_RETURN_IF_ERROR(r.Str(&k));
  ACAN_RETURN_IF_ERROR(r.Pod(&m.in_hand_ns));
  ACAN_RETURN_IF_ERROR(r.Pod(&m.reported_wall_ns));
  ACAN_RETURN_IF_ERROR(r.Pod(&m.speed));
  if (!(m.speed > 0 && m.speed <= 1e6)) {
    return Status::DataLoss(
        fmt::format("done tuple has speed factor {}, not in (0, 1e6]", m.speed));
  }
  if (!r.AtEnd()) ACAN_RETURN_IF_ERROR(r.Str(&m.refused));
  ACAN_RETURN_IF_ERROR(r.End());
  return m;
}

Value EncodeAliveMessage(const AliveMessage& m) {
  return Value::FromVector(std::vector<int64_t>{m.incarnation, m.memory});
}

Result<AliveMessage> DecodeAliveMessage(const Value& v) {
  if (v.size() % sizeof(int64_t) != 0) {
    return Status::DataLoss(fmt::format("an alive tuple of {} bytes: not int64s", v.size()));
  }
  const size_t n = v.size() / sizeof(int64_t);
  if (n != 1 && n != 2) {
    return Status::DataLoss(
        fmt::format("an alive tuple holds an incarnation and a memory budget, not {} int64s", n));
  }
  int64_t a[2] = {0, 0};
  std::memcpy(a, v.data(), v.size());
  AliveMessage m;
  m.incarnation = a[0];
  m.memory = a[1];
  if (m.memory < 0) {
    return Status::DataLoss(fmt::format("an alive tuple with a memory budget of {}", m.memory));
  }
  return m;
}

Value EncodeLeaseMessage(const LeaseMessage& m) {
  Writer w;
  w.Pod(kLeaseMagic);
  w.Str(m.owner);
  w.Pod(m.expires_ms);
  return w.Done();
}

Result<LeaseMessage> DecodeLeaseMessage(const Value& v) {
  Reader r(v, "lease");
  LeaseMessage m;
  ACAN_RETURN_IF_ERROR(r.Magic(kLeaseMagic));
  ACAN_RETURN_IF_ERROR(r.Str(&m.owner));
  ACAN_RETURN_IF_ERROR(r.Pod(&m.expires_ms));
  ACAN_RETURN_IF_ERROR(r.End());
  return m;
}

}  // namespace acan::runtime
