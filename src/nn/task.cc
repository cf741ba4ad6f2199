#include "nn/task.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "nn/json_int.h"
#include "nn/network.h"

namespace acan::nn {

Result<TaskType> ParseTaskType(std::string_view name) {
  for (TaskType t : {TaskType::kForward, TaskType::kActivation, TaskType::kLoss,
                     TaskType::kBackward, TaskType::kUpdate}) {
    if (ToString(t) == name) return t;
  }
  return Status::InvalidArgument("unknown task type '" + std::string(name) +
                                 "'; use one of: forward | activation | loss | backward | update");
}

std::string_view ToString(TaskType t) {
  switch (t) {
    case TaskType::kForward:
      return "forward";
    case TaskType::kActivation:
      return "activation";
    case TaskType::kLoss:
      return "loss";
    case TaskType::kBackward:
      return "backward";
    case TaskType::kUpdate:
      return "update";
  }
  return "?";
}

std::string_view ToString(TaskOp op) {
  switch (op) {
    case TaskOp::kTileForward:
      return "tile_forward";
    case TaskOp::kTileActivation:
      return "tile_activation";
    case TaskOp::kLoss:
      return "loss";
    case TaskOp::kTileBackward:
      return "tile_backward";
    case TaskOp::kTileInputGrad:
      return "tile_input_grad";
    case TaskOp::kMicroBatch:
      return "micro_batch";
    case TaskOp::kStageForward:
      return "stage_forward";
    case TaskOp::kStageBackward:
      return "stage_backward";
    case TaskOp::kUpdate:
      return "update";
    case TaskOp::kChain:
      return "chain";
  }
  return "?";
}

std::string EncodeTask(const TaskSpec& t) {
  nlohmann::json j = {
      {"key", t.key},
      {"type", static_cast<int>(t.type)},
      {"op", static_cast<int>(t.op)},
      {"step", t.step},
      {"in", t.inputs},
      {"out", t.outputs},
      {"widths", t.widths},
      {"act", static_cast<int>(t.activation)},
      {"loss", static_cast<int>(t.loss)},
      {"lr", t.lr},
      {"lrs", t.lrs},
      {"mom", t.momentum},
      {"rows", t.rows},
      {"batch", t.batch},
      {"layer", t.layer},
      {"layer_end", t.layer_end},
      {"tile", {t.r0, t.r1, t.c0, t.c1}},
      {"block", t.block},
      {"parts", t.parts},
      {"bias", t.bias},
  };
  if (!t.part_edges.empty()) j["part_edges"] = t.part_edges;
  if (!t.net.empty()) {
    nlohmann::json net = nlohmann::json::array();
    for (const LayerConfig& l : t.net) {
      net.push_back({static_cast<int>(l.type), l.in, l.out, l.kernel_h, l.kernel_w, l.stride,
                     l.padding, l.bias ? 1 : 0, l.p});
    }
    j["net"] = std::move(net);
    j["input_shape"] = t.input_shape;
  }
  if (t.seed != 0) j["seed"] = t.seed;
  if (t.batch_index >= 0) j["batch_index"] = t.batch_index;
  return j.dump();
}

Result<TaskSpec> DecodeTask(std::string_view bytes) {
  nlohmann::json j = nlohmann::json::parse(bytes, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::InvalidArgument("task bytes are not a JSON object made by EncodeTask");
  }
  TaskSpec t;
  try {
    t.key = j.at("key").get<std::string>();
    t.type = static_cast<TaskType>(JsonInt<int>(j.at("type")));
    t.op = static_cast<TaskOp>(JsonInt<int>(j.at("op")));
    t.step = JsonInt(j.at("step"));
    t.inputs = j.at("in").get<std::vector<std::string>>();
    t.outputs = j.at("out").get<std::vector<std::string>>();
    t.widths = JsonInts(j.at("widths"));
    t.activation = static_cast<Activation>(JsonInt<int>(j.at("act")));
    t.loss = static_cast<LossKind>(JsonInt<int>(j.at("loss")));
    t.lr = j.at("lr").get<float>();
    t.lrs = j.value("lrs", std::vector<float>{});
    t.momentum = j.at("mom").get<float>();
    t.rows = JsonInt(j.at("rows"));
    t.batch = JsonInt(j.at("batch"));
    t.layer = JsonInt<int>(j.at("layer"));
    t.layer_end = JsonInt<int>(j.at("layer_end"));
    const auto tile = JsonInts(j.at("tile"));
    if (tile.size() != 4) return Status::InvalidArgument("task field \"tile\" needs 4 numbers");
    t.r0 = tile[0], t.r1 = tile[1], t.c0 = tile[2], t.c1 = tile[3];
    t.block = JsonInt(j.at("block"));
    t.parts = JsonInt<int>(j.at("parts"));
    t.bias = j.at("bias").get<bool>();
    if (j.contains("part_edges")) t.part_edges = JsonInts(j.at("part_edges"));
    if (j.contains("net")) {
      for (const nlohmann::json& l : j.at("net")) {
        if (!l.is_array() || l.size() != 9) {
          return Status::InvalidArgument("task field \"net\": a layer needs 9 fields");
        }
        LayerConfig c;
        const int type = JsonInt<int>(l[0]);
        if (type < 0 || type > static_cast<int>(LayerType::kDropout)) {
          return Status::InvalidArgument("task field \"net\": an unknown layer type");
        }
        c.type = static_cast<LayerType>(type);
        c.in = JsonInt(l[1]), c.out = JsonInt(l[2]), c.kernel_h = JsonInt(l[3]);
        c.kernel_w = JsonInt(l[4]), c.stride = JsonInt(l[5]), c.padding = JsonInt(l[6]);
        c.bias = JsonInt<int>(l[7]) != 0;
        c.p = l[8].get<double>();
        t.net.push_back(c);
      }
      t.input_shape = JsonInts(j.at("input_shape"));
    }
    t.seed = j.value("seed", uint64_t{0});
    t.batch_index = j.contains("batch_index") ? JsonInt(j.at("batch_index")) : -1;
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("task bytes lack a field or have a wrong type: ") +
                                   e.what());
  }
  const int layers = static_cast<int>(t.widths.size()) - 1;
  bool ok = static_cast<int>(t.op) >= 0 && t.op <= TaskOp::kChain &&
            static_cast<int>(t.type) >= 0 && t.type <= TaskType::kUpdate &&
            static_cast<int>(t.activation) >= 0 && t.activation <= Activation::kIdentity &&
            static_cast<int>(t.loss) >= 0 && t.loss <= LossKind::kSoftmaxCrossEntropy &&
            layers >= 1 && t.layer >= 0 && (t.layer < layers || !t.net.empty()) &&
            t.layer_end >= 0 && (t.layer_end <= layers || !t.net.empty()) && t.rows >= 0 &&
            t.batch >= 1 && t.parts >= 0 && t.block >= 0 && t.r0 >= 0 && t.r0 <= t.r1 &&
            t.c0 >= 0 && t.c0 <= t.c1;
  // Every size bounded before any is multiplied (docs/operations.md, "Limits"): a task's tensor
  // is at most kMaxTaskElements floats, whatever its message says.
  ok = ok && layers <= kMaxTaskLayers && t.rows <= kMaxTaskElements && t.batch <= kMaxTaskElements;
  for (int64_t w : t.widths) {
    ok = ok && w >= 1 && w <= kMaxTaskElements &&
         std::max<int64_t>(t.rows, 1) <= kMaxTaskElements / w;
  }
  for (int l = 0; ok && l < layers; ++l) ok = t.widths[l] <= kMaxTaskElements / t.widths[l + 1];
  if (ok && !t.net.empty()) {
    // A list's own checks (bounded sizes, shapes that fit), then an update's shard within its
    // tensor and the list's flat ends as the widths.
    Result<Network> net = Network::Create(t.net, t.input_shape);
    // The rows times any layer's activation bounded as a tensor is (kMaxTaskElements).
    ok = net.ok() && layers == 1 && t.widths[0] == net->InputSize() &&
         t.widths[1] == net->OutputSize() && t.batch_index >= -1 &&
         std::max<int64_t>(t.rows, 1) <= kMaxTaskElements / net->LargestActivation();
    if (ok) {
      int64_t weights = 0, rows = 0, cols = 0;
      for (const ListParam& p : net->params()) {
        if (p.bias) continue;
        if (weights++ == t.layer) rows = p.rows, cols = p.cols;
      }
      ok = t.layer < std::max<int64_t>(weights, 1) && t.layer_end <= weights &&
           (t.op != TaskOp::kUpdate || (t.r1 <= rows && t.c1 <= (t.bias ? 1 : cols)));
      const bool stage = t.op == TaskOp::kStageForward || t.op == TaskOp::kStageBackward;
      const bool tile = t.op == TaskOp::kTileForward || t.op == TaskOp::kTileActivation ||
                        t.op == TaskOp::kTileBackward || t.op == TaskOp::kTileInputGrad;
      ok = ok && (t.op == TaskOp::kMicroBatch || t.op == TaskOp::kUpdate ||
                  t.op == TaskOp::kChain || (stage && t.layer < t.layer_end) || tile ||
                  (t.op == TaskOp::kLoss && (t.parts <= 1 || !t.part_edges.empty())));
      if (ok && tile) {
        // A tile of a list cut in tiles: its output units [r0, r1) and input units [c0, c1)
        // within its layer's, and at least one part to sum, no more than the inputs it names.
        Result<std::vector<Network::TileLayer>> tiles = net->TileLayers();
        ok = tiles.ok() && t.layer < static_cast<int>(tiles->size());
        if (ok) {
          const Network::TileLayer& l = (*tiles)[size_t(t.layer)];
          const bool sums = t.op == TaskOp::kTileActivation || t.op == TaskOp::kTileInputGrad;
          ok = (!sums || (t.parts >= 1 && size_t(t.parts) <= t.inputs.size())) &&
               (t.op != TaskOp::kTileInputGrad || t.layer >= 1) &&
               (t.op == TaskOp::kTileInputGrad || (t.r0 < t.r1 && t.r1 <= l.out_units)) &&
               (t.op == TaskOp::kTileActivation || (t.c0 < t.c1 && t.c1 <= l.in_units));
        }
      }
    }
  } else if (ok) {
    ok = t.r1 <= t.widths[t.layer + 1] && t.c1 <= t.widths[t.layer];
  }
  if (ok && !t.part_edges.empty()) {  // 0, increasing, the output's width: one more than parts
    ok = t.op == TaskOp::kLoss && t.part_edges.size() == size_t(std::max(1, t.parts)) + 1 &&
         t.part_edges.front() == 0 && t.part_edges.back() == t.widths.back();
    for (size_t i = 1; ok && i < t.part_edges.size(); ++i)
      ok = t.part_edges[i] > t.part_edges[i - 1];
  }
  if (!ok) {
    return Status::InvalidArgument("task \"" + t.key +
                                   "\" has out-of-range fields; was it made by EncodeTask?");
  }
  return t;
}

}  // namespace acan::nn
