// Runs one task: a pure function from its input tensors to its output tensors. The same spec and
// inputs give bitwise the same outputs (every reduction runs in the order of the inputs), which
// is what lets a distributed run with window 1 reproduce the reference trainer exactly.
// Thread-safe: tasks may run concurrently on different threads.
#pragma once

#include <span>
#include <vector>

#include "acan/status.h"
#include "nn/task.h"

namespace acan::nn {

// inputs[i] holds the tensor named task.inputs[i]; on success outputs holds one tensor per
// task.outputs, in that order. Vectors already in *outputs are reused (every value is
// overwritten), so a caller that recycles buffers of OutputSizes() saves allocation and zeroing.
// An update task may run in place: (*outputs)[0] may be the storage that inputs[0] (the
// parameter) views, and (*outputs)[1] that of the last input (the velocity). Input sizes are
// checked against the spec (InvalidArgument naming the task and the key); label values are checked
// by the loss.
Status ExecuteTask(const TaskSpec& task, std::span<const std::span<const float>> inputs,
                   std::vector<std::vector<float>>* outputs);

// The float count of every input and output of a task, in order (for checks and allocation).
std::vector<int64_t> InputSizes(const TaskSpec& task);
std::vector<int64_t> OutputSizes(const TaskSpec& task);
// Floats a task reads and writes: the size of its work, for scheduling and accounting.
int64_t TaskWork(const TaskSpec& task);

}  // namespace acan::nn
