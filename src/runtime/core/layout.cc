#include "runtime/core/layout.h"

#include <fmt/format.h>

#include <charconv>

#include "nn/plan.h"

namespace acan::runtime {

namespace {

// "<tag><digits>" -> the number, or nullopt.
std::optional<int64_t> Tagged(std::string_view token, char tag) {
  if (token.size() < 2 || token[0] != tag) return std::nullopt;
  int64_t v = -1;
  auto [end, ec] = std::from_chars(token.data() + 1, token.data() + token.size(), v);
  if (ec != std::errc() || end != token.data() + token.size() || v < 0) return std::nullopt;
  return v;
}

// Tokens [from, to) of a key joined again.
std::string Join(const Key& key, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    if (i > from) out += '.';
    out += key.token(i);
  }
  return out;
}

}  // namespace

Layout::Layout(std::string job) : job_(std::move(job)), job_key_(Key::Parse(job_).value()) {}

Key Layout::Make(std::string text) const { return Key::Parse(text).value(); }
Pattern Layout::MakePattern(std::string text) const { return Pattern::Parse(text).value(); }

namespace {

// A size class's tokens: one "z" a class, then "b" (class 0: "b" alone).
std::string ClassTokens(int size_class) {
  std::string out;
  for (int i = 0; i < size_class; ++i) out += "z.";
  return out;
}

}  // namespace

Key Layout::Task(nn::TaskType type, std::string_view task_key, int size_class) const {
  if (size_class < 0) return Make(fmt::format("{}.task.{}.{}", job_, nn::ToString(type), task_key));
  return Make(fmt::format("{}.task.{}.{}b.{}", job_, nn::ToString(type), ClassTokens(size_class),
                          task_key));
}
Pattern Layout::TaskPattern(nn::TaskType type, int size_class, bool exact) const {
  if (size_class < 0) return MakePattern(fmt::format("{}.task.{}.>", job_, nn::ToString(type)));
  return MakePattern(fmt::format("{}.task.{}.{}{}>", job_, nn::ToString(type),
                                 ClassTokens(size_class), exact ? "b." : ""));
}
Pattern Layout::AnyTaskPattern(int size_class, bool exact) const {
  if (size_class < 0) return MakePattern(job_ + ".task.>");
  return MakePattern(
      fmt::format("{}.task.*.{}{}>", job_, ClassTokens(size_class), exact ? "b." : ""));
}
Key Layout::Tensor(std::string_view key) const { return Make(fmt::format("{}.t.{}", job_, key)); }
Key Layout::State(std::string_view key, int64_t version) const {
  return Make(fmt::format("{}.p.{}.v{}", job_, key, version));
}
Pattern Layout::StatePattern(std::string_view key) const {
  return MakePattern(fmt::format("{}.p.{}.*", job_, key));
}
Pattern Layout::AllStatesPattern() const { return MakePattern(job_ + ".p.>"); }
Key Layout::Proposal(std::string_view key, int64_t step) const {
  return Make(fmt::format("{}.u.{}.s{}", job_, key, step));
}
Pattern Layout::AllProposalsPattern() const { return MakePattern(job_ + ".u.>"); }
Key Layout::Output(std::string_view out, int64_t step) const {
  return nn::Plan::IsStateKey(out) ? Proposal(out, step) : Tensor(out);
}
Key Layout::Done(std::string_view task_key) const {
  return Make(fmt::format("{}.done.{}", job_, task_key));
}
Pattern Layout::DonePattern() const { return MakePattern(job_ + ".done.>"); }
Key Layout::RestartNotice(int handler) const {
  return Make(fmt::format("{}.done.restarted.h{}", job_, handler));
}
Key Layout::Claim(std::string_view task_key, int handler) const {
  return Make(fmt::format("{}.claim.{}.h{}", job_, task_key, handler));
}
Pattern Layout::ClaimPattern(std::string_view task_key) const {
  return MakePattern(fmt::format("{}.claim.{}.*", job_, task_key));
}
Pattern Layout::AllClaimsPattern() const { return MakePattern(job_ + ".claim.>"); }
Key Layout::StepOpen(int64_t step) const { return Make(fmt::format("{}.step.s{}", job_, step)); }
Key Layout::Alive(int handler) const { return Make(fmt::format("{}.alive.h{}", job_, handler)); }
Pattern Layout::AllAlivePattern() const { return MakePattern(job_ + ".alive.*"); }
Key Layout::ManagerState() const { return Make(job_ + ".m.state"); }
Key Layout::Lease() const { return Make(job_ + ".m.lease"); }
Key Layout::AuditRecord(int64_t seq) const { return Make(fmt::format("{}.audit.a{}", job_, seq)); }
std::vector<Pattern> Layout::FencedKeys() const {
  return {AllStatesPattern(), Pattern::Exactly(ManagerState()), Pattern::Exactly(Lease()),
          Pattern::Exactly(JobDescriptor())};
}
Key Layout::InitGuard() const { return Make(job_ + ".m.init"); }
Key Layout::JobDescriptor() const { return Make(job_ + ".m.job"); }
Key Layout::DataHint() const { return Make(job_ + ".m.data"); }
Key Layout::Usage(std::string_view process) const {
  return Make(job_ + ".usage." + std::string(process));
}
Pattern Layout::UsagePattern() const { return MakePattern(job_ + ".usage.*"); }

int64_t Layout::StepOf(std::string_view key) {
  const size_t dot = key.find('.');
  if (dot == std::string_view::npos) return -1;
  std::string_view rest = key.substr(dot + 1);
  return Tagged(rest.substr(0, rest.find('.')), 's').value_or(-1);
}

std::string Layout::TaskClass(std::string_view key) {
  std::string out;
  size_t begin = 0;
  while (begin <= key.size()) {
    size_t end = key.find('.', begin);
    if (end == std::string_view::npos) end = key.size();
    std::string_view token = key.substr(begin, end - begin);
    if (!Tagged(token, 's')) {
      if (!out.empty()) out += '.';
      out += token;
    }
    begin = end + 1;
  }
  return out;
}

Result<ParsedKey> Layout::Parse(const Key& key) const {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument(
        fmt::format("'{}' is not a key of job '{}': {}", key.str(), job_, why));
  };
  const size_t n = key.token_count();
  const size_t j = job_key_.token_count();
  if (n < j + 2) return bad("too few tokens");
  for (size_t i = 0; i < j; ++i) {
    if (key.token(i) != job_key_.token(i)) return bad("another job's");
  }
  const std::string_view area = key.token(j);
  ParsedKey p;
  const size_t last = n - 1;
  if (area == "task") {
    if (n < j + 4) return bad("a task key is <job>.task.<type>.<task key>");
    auto type = nn::ParseTaskType(key.token(j + 1));
    if (!type.ok()) return bad(type.status().message());
    p.kind = KeyKind::kTask;
    p.task_type = *type;
    // A size class: c tokens "z", then "b" (no task key's verb is z or b).
    size_t at = j + 2;
    while (at < n && key.token(at) == "z") ++at;
    if (at < n && key.token(at) == "b") {
      p.size_class = static_cast<int>(at - (j + 2));
      ++at;
    } else if (at != j + 2) {
      return bad("a task of a size class is <job>.task.<type>[.z...].b.<task key>");
    }
    if (at + 2 > n) return bad("a task key is <job>.task.<type>.<task key>");
    p.task_key = Join(key, at, n);
    p.step = StepOf(p.task_key);
  } else if (area == "t") {
    p.kind = KeyKind::kTensor;
    p.name = Join(key, j + 1, n);
    p.step = StepOf(p.name);
  } else if (area == "p" || area == "u") {
    const auto number = Tagged(key.token(last), area == "p" ? 'v' : 's');
    if (n < j + 3 || !number) {
      return bad(area == "p" ? "a state key ends in v<version>" : "a proposal ends in s<step>");
    }
    p.kind = area == "p" ? KeyKind::kState : KeyKind::kProposal;
    p.name = Join(key, j + 1, last);
    (area == "p" ? p.version : p.step) = *number;
  } else if (area == "done") {
    if (key.token(j + 1) == "restarted") {
      const auto h = Tagged(key.token(last), 'h');
      if (n != j + 3 || !h) return bad("a restart notice is <job>.done.restarted.h<id>");
      p.kind = KeyKind::kRestartNotice;
      p.handler = static_cast<int>(*h);
    } else {
      p.kind = KeyKind::kDone;
      p.task_key = Join(key, j + 1, n);
      p.step = StepOf(p.task_key);
    }
  } else if (area == "claim") {
    const auto h = Tagged(key.token(last), 'h');
    if (n < j + 3 || !h) return bad("a claim is <job>.claim.<task key>.h<id>");
    p.kind = KeyKind::kClaim;
    p.task_key = Join(key, j + 1, last);
    p.step = StepOf(p.task_key);
    p.handler = static_cast<int>(*h);
  } else if (area == "alive") {
    const auto h = Tagged(key.token(last), 'h');
    if (n != j + 2 || !h) return bad("an alive tuple is <job>.alive.h<id>");
    p.kind = KeyKind::kAlive;
    p.handler = static_cast<int>(*h);
  } else if (area == "step") {
    const auto s = Tagged(key.token(last), 's');
    if (n != j + 2 || !s) return bad("a step marker is <job>.step.s<step>");
    p.kind = KeyKind::kStepOpen;
    p.step = *s;
  } else if (area == "usage") {
    if (n != j + 2) return bad("a usage tuple is <job>.usage.<process>");
    p.kind = KeyKind::kUsage;
    p.name = std::string(key.token(j + 1));
  } else if (area == "m" && n == j + 2) {
    const std::string_view what = key.token(j + 1);
    if (what == "state") {
      p.kind = KeyKind::kManagerState;
    } else if (what == "lease" || what == "init") {
      p.kind = KeyKind::kLease;
    } else if (what == "job") {
      p.kind = KeyKind::kJobDescriptor;
    } else if (what == "data") {
      p.kind = KeyKind::kDataHint;
    } else {
      return bad("the manager's keys are m.state, m.lease, m.init, m.job and m.data");
    }
  } else {
    return bad(fmt::format("unknown area '{}'", area));
  }
  return p;
}

}  // namespace acan::runtime
