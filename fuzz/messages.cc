// What the runtime decodes from tuples others wrote: task messages (with the task spec inside),
// done reports, the lease and a handler's alive tuple, the job descriptor, the manager's
// progress, and the keys of the job's layout. The first byte picks the decoder, the rest is the
// value. Property: a task message (and an alive tuple) that decodes encodes back to one that
// decodes to the same.
#include "runtime/core/messages.h"

#include <cstdlib>
#include <string_view>

#include "nn/task.h"
#include "runtime/core/layout.h"
#include "runtime/core/progress.h"
#include "runtime/state/local_inputs.h"

using namespace acan;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t which = data[0] % 7;
  const Value v = Value::CopyOf(data + 1, size - 1);
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (which) {
    case 0: {
      auto m = runtime::DecodeTaskMessage(v);
      (void)runtime::TaskMessageAttempt(v);
      if (m.ok()) {
        const std::string spec = nn::EncodeTask(m->spec);
        auto again = runtime::DecodeTaskMessage(
            runtime::EncodeTaskMessage(m->attempt, m->input_keys, spec, m->timeout_ns));
        if (!again.ok() || nn::EncodeTask(again->spec) != spec) std::abort();
      }
      break;
    }
    case 1:
      (void)runtime::DecodeDoneMessage(v);
      break;
    case 2: {
      (void)runtime::DecodeLeaseMessage(v);
      auto alive = runtime::DecodeAliveMessage(v);  // a handler's alive tuple, on the same bytes
      if (alive.ok()) {
        auto again = runtime::DecodeAliveMessage(runtime::EncodeAliveMessage(*alive));
        if (!again.ok() || again->incarnation != alive->incarnation ||
            again->memory != alive->memory) {
          std::abort();
        }
      }
      break;
    }
    case 3:
      (void)runtime::DecodeJobDescriptor(v);
      break;
    case 4:
      (void)runtime::Progress::FromJson(text);
      break;
    case 5:
      (void)nn::DecodeTask(text);
      break;
    case 6: {
      auto key = Key::Parse(text);
      if (key.ok()) (void)runtime::Layout("job").Parse(*key);
      break;
    }
  }
  return 0;
}
