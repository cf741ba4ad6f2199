#include "runtime/state/step_cleanup.h"

#include <string>

namespace acan::runtime {

Status RemoveStep(Space* space, const Layout& layout, const StepFlow& st, bool inputs_in_space) {
  Status first;
  int failed = 0;
  auto drop = [&](const auto& what) {  // a key or a pattern
    auto erased = space->Erase(what);
    if (erased.ok() || erased.status().IsNotFound()) return;
    if (failed++ == 0) first = erased.status();
  };
  drop(layout.StepOpen(st.step));  // first: see above
  if (inputs_in_space) {
    for (const std::string& k : st.inputs) drop(layout.Tensor(k));
  }
  for (const StepTask& t : st.tasks) {
    drop(layout.Task(t.spec.type, t.spec.key, t.size_class));
    drop(layout.ClaimPattern(t.spec.key));
    for (const std::string& out : t.spec.outputs) drop(layout.Output(out, st.step));
  }
  if (failed == 0) return Status::Ok();
  return Status(first.code(), "cleaning up step " + std::to_string(st.step) + ": " +
                                  std::to_string(failed) +
                                  " removals failed, the first: " + first.message());
}

}  // namespace acan::runtime
