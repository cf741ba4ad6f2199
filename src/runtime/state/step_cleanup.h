// Clearing a finished step out of the space: the manager's last act for a step, after the step is
// saved as applied (a manager that dies before it is done leaves the rest to its successor).
#pragma once

#include "acan/space.h"
#include "runtime/core/dataflow.h"
#include "runtime/core/layout.h"

namespace acan::runtime {

// Removes what a step left in the space: the step marker first (a handler whose outputs land
// from then on finds it gone and takes them back), its inputs, queued copies of its tasks, their
// claims and every output. Tuples of other steps stay.
// `inputs_in_space` false: the step's inputs were never put (runtime/state/local_inputs.h).
// Every removal is tried; the first that failed (a tuple not there is no failure) is returned,
// with how many failed.
Status RemoveStep(Space* space, const Layout& layout, const StepFlow& step,
                  bool inputs_in_space = true);

}  // namespace acan::runtime
