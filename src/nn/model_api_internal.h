// Conversions between the public acan::Model (named tensors) and the kernels' nn::Model (per-layer
// vectors). Shared by nn and runtime; not installed.
#pragma once

#include "acan/model.h"
#include "nn/evaluate.h"
#include "nn/model.h"

namespace acan::nn {

acan::Model ToPublicModel(const Model& model);
Model FromPublicModel(const acan::Model& model);
EvalResult ToPublicEval(const EvalReport& report, std::string split, bool classification);

}  // namespace acan::nn
