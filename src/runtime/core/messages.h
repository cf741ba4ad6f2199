// The values of the runtime's tuples: a task to run, a handler's done report, its alive tuple,
// the manager's lease. Binary, little-endian, versioned by a magic number (the alive tuple: two
// int64s); Decode checks every length, so a corrupt or foreign tuple is a DataLoss error, never a
// crash. Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "acan/status.h"
#include "acan/value.h"
#include "nn/task.h"

namespace acan::runtime {

struct TaskMessage {
  nn::TaskSpec spec;
  int32_t attempt = 1;
  // The manager's deadline for it, from when it was sent (0: not said).
  int64_t timeout_ns = 0;
  // The space key each input is read from, in spec.inputs order (state inputs resolved to the
  // version this attempt must read).
  std::vector<std::string> input_keys;
};
// A TaskMessage with its spec already encoded (nn::EncodeTask): the manager encodes a step's specs
// when it admits the step, a step ahead, so that sending a task costs no JSON on the critical path.
Value EncodeTaskMessage(int32_t attempt, const std::vector<std::string>& input_keys,
                        std::string_view encoded_spec, int64_t timeout_ns = 0);
Result<TaskMessage> DecodeTaskMessage(const Value& v);
// Only a task message's attempt, without decoding its spec (an observer of every put).
Result<int32_t> TaskMessageAttempt(const Value& v);

struct DoneMessage {
  int32_t attempt = 0;
  int32_t handler = -1;
  int64_t exec_ns = 0;  // time the kernel ran (including any injected slow-down)
  std::string error;    // non-empty: the task failed deterministically (bad inputs); no outputs
  // Non-empty: the task did not run because these inputs (space keys) were not in the space; the
  // manager brings them back (docs/architecture.md) and sends the task again.
  std::vector<std::string> missing;
  // From taking the task to reporting it: its kernel and its reads and writes through the space
  // (0: not said). What a task usually costs its handler, trips through a server included.
  int64_t in_hand_ns = 0;
  // When the handler sent the report (its wall clock, ns; 0: not said): what an observer behind
  // a busy connection times a redo by, rather than by when it happened to read the report.
  int64_t reported_wall_ns = 0;
  // The handler's slow-down factor when it reported (1: full speed, or not slowed; > 0): what
  // its time is against its processor's usual one.
  double speed = 1.0;
  // Non-empty: the handler would not run the task, and why (its working set is over the
  // handler's memory budget); no outputs. The manager logs it and sends the task again.
  std::string refused = "";
};
Value EncodeDoneMessage(const DoneMessage& m);
Result<DoneMessage> DecodeDoneMessage(const Value& v);

// A handler's alive tuple (<job>.alive.h<id>): the incarnation that announced itself, and the
// memory budget it runs under (bytes; 0: none), which the manager cuts a new job's tiles by.
// Two int64s; one alone (as written before budgets were announced) reads as no budget.
struct AliveMessage {
  int64_t incarnation = 0;
  int64_t memory = 0;
};
Value EncodeAliveMessage(const AliveMessage& m);
Result<AliveMessage> DecodeAliveMessage(const Value& v);

struct LeaseMessage {
  std::string owner;
  int64_t expires_ms = 0;  // system clock, milliseconds since the epoch; 0 = free
};
Value EncodeLeaseMessage(const LeaseMessage& m);
Result<LeaseMessage> DecodeLeaseMessage(const Value& v);

}  // namespace acan::runtime
