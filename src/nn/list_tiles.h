// The tiles strategy on a list of layers (Plan::TilesTasks, Network::TileLayers): each layer
// with weights a product over blocks of units with its post-ops on a block of its outputs. The
// executor (executor.h) sends a list's tile tasks here.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "acan/status.h"
#include "nn/task.h"

namespace acan::nn {

using TileInputs = std::span<const std::span<const float>>;

// Inputs 0 .. parts - 1 summed in that order (a tile's partial outputs, its parts of an input's
// gradient): the same bytes for the widths form's tiles and a list's.
std::vector<float> SumParts(TileInputs in, int parts);

bool IsTileOp(TaskOp op);
// A list's tile task's input and output sizes, in floats, in order.
std::vector<int64_t> ListTileInputSizes(const TaskSpec& t);
std::vector<int64_t> ListTileOutputSizes(const TaskSpec& t);
// Runs a list's tile task (its inputs checked against ListTileInputSizes by the caller).
Status RunListTile(const TaskSpec& t, TileInputs in, std::vector<std::vector<float>>* out);

}  // namespace acan::nn
