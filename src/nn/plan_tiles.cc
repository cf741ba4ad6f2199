// Plan: the tiles strategy's tasks (TileCutOf, TilesTasks), for dense stacks and layer lists.
// See plan.h.
#include <algorithm>

#include "nn/network.h"
#include "nn/plan.h"
#include "nn/plan_keys.h"

namespace acan::nn {
namespace {

using plan_keys::ParamKey;
using plan_keys::S;
using plan_keys::T;

}  // namespace

Plan::TileCut Plan::TileCutOf(int l) const {
  TileCut cut;
  if (net_.empty()) {
    cut.rows = Cuts(widths_[size_t(l) + 1]);
    cut.cols = Cuts(widths_[size_t(l)]);
    return cut;
  }
  const Network::TileLayer& tl = tile_layers_[size_t(l)];
  cut.rows = Cuts(tl.out_units);
  cut.cols = Cuts(tl.in_units);
  cut.bias = tl.bias;
  cut.keeps_z = tl.end > tl.layer + 1 && l + 1 < weight_layers_;
  return cut;
}

// The tiles strategy: each layer with weights a product over blocks of units, the widths form's
// features, or a list's (Network::TileLayers) convolution channels and linear features, with
// its post-ops (activation, pooling, flatten, dropout) on a block of its outputs alone.
//  - fwd.l<l>.r<r>.c<c>: input block c times weight tile (r, c): a partial output zp, no bias;
//  - act.l<l>.r<r>: the partials summed in order, the bias, then the activation (a list: the
//    post-ops) on output block r alone: h, and z (the block before the post-ops) when a later
//    layer goes back through them;
//  - loss: every output block, the targets: the metrics and d loss / d output, block by block;
//  - bwd.l<l>.r<r>.c<c>: the tile's weight gradient, its bias block's (c = 0), and (l > 0) dap,
//    its part of d loss / d input block c;
//  - bact.l<l>.c<c> (l > 0): the parts summed in order, then back through layer l - 1's
//    activation or post-ops from its h or z block: dz of layer l - 1's block c.
void Plan::TilesTasks(int64_t step, int64_t rows, std::vector<TaskSpec>* out) const {
  const int layers = weight_layers_;
  const int last = layers - 1;
  std::vector<TileCut> cuts;
  for (int l = 0; l < layers; ++l) cuts.push_back(TileCutOf(l));
  // Column block c of layer l's input: x for layer 0, else row block c of layer l-1's output.
  auto act_in = [&](int l, int64_t c) {
    return l == 0 ? S("x", step) + T('c', c) : S("h", step) + T('l', l - 1) + T('r', c);
  };
  // The block of layer l's output that the backward goes back through its post-ops from.
  auto pre = [&](int l, int64_t r) {
    return S(cuts[size_t(l)].keeps_z ? "z" : "h", step) + T('l', l) + T('r', r);
  };
  for (int l = 0; l < layers; ++l) {
    const std::vector<int64_t>&rc = cuts[size_t(l)].rows, &cc = cuts[size_t(l)].cols;
    const int64_t nr = int64_t(rc.size()) - 1, nc = int64_t(cc.size()) - 1;
    for (int64_t r = 0; r < nr; ++r) {
      for (int64_t c = 0; c < nc; ++c) {
        TaskSpec t = Base(step, rows);
        t.key = S("fwd", step) + T('l', l) + T('r', r) + T('c', c);
        t.type = TaskType::kForward;
        t.op = TaskOp::kTileForward;
        t.layer = l;
        t.r0 = rc[r], t.r1 = rc[r + 1];
        t.c0 = cc[c], t.c1 = cc[c + 1];
        t.inputs = {act_in(l, c), ParamKey(l, false) + T('r', r) + T('c', c)};
        t.outputs = {S("zp", step) + T('l', l) + T('r', r) + T('c', c)};
        out->push_back(std::move(t));
      }
    }
    for (int64_t r = 0; r < nr; ++r) {
      TaskSpec t = Base(step, rows);
      t.key = S("act", step) + T('l', l) + T('r', r);
      t.type = TaskType::kActivation;
      t.op = TaskOp::kTileActivation;
      t.layer = l;
      t.r0 = rc[r], t.r1 = rc[r + 1];
      t.parts = static_cast<int>(nc);
      for (int64_t c = 0; c < nc; ++c)
        t.inputs.push_back(S("zp", step) + T('l', l) + T('r', r) + T('c', c));
      if (cuts[size_t(l)].bias) t.inputs.push_back(ParamKey(l, true) + T('r', r));
      t.outputs = {S("h", step) + T('l', l) + T('r', r)};
      if (cuts[size_t(l)].keeps_z) t.outputs.push_back(pre(l, r));
      out->push_back(std::move(t));
    }
  }
  const std::vector<int64_t>& outs = cuts[size_t(last)].rows;
  const int64_t nout = int64_t(outs.size()) - 1;
  {
    TaskSpec t = Base(step, rows);
    t.key = S("loss", step);
    t.type = TaskType::kLoss;
    t.op = TaskOp::kLoss;
    t.layer = last;
    if (!net_.empty()) {  // a list's output blocks in floats: units x what a unit is at the end
      t.part_edges = outs;
      for (int64_t& e : t.part_edges) e *= tile_layers_[size_t(last)].h_per_unit;
    } else if (bands_.empty()) {
      t.block = task_size_;
    } else {
      t.part_edges = outs;
    }
    t.parts = static_cast<int>(nout);
    for (int64_t r = 0; r < nout; ++r) t.inputs.push_back(S("h", step) + T('l', last) + T('r', r));
    t.inputs.push_back(S("t", step));
    t.outputs = {S("met", step)};
    for (int64_t r = 0; r < nout; ++r)
      t.outputs.push_back(S("dz", step) + T('l', last) + T('r', r));
    out->push_back(std::move(t));
  }
  for (int l = last; l >= 0; --l) {
    const std::vector<int64_t>&rc = cuts[size_t(l)].rows, &cc = cuts[size_t(l)].cols;
    const int64_t nr = int64_t(rc.size()) - 1, nc = int64_t(cc.size()) - 1;
    for (int64_t r = 0; r < nr; ++r) {
      for (int64_t c = 0; c < nc; ++c) {
        TaskSpec t = Base(step, rows);
        t.key = S("bwd", step) + T('l', l) + T('r', r) + T('c', c);
        t.type = TaskType::kBackward;
        t.op = TaskOp::kTileBackward;
        t.layer = l;
        t.r0 = rc[r], t.r1 = rc[r + 1];
        t.c0 = cc[c], t.c1 = cc[c + 1];
        t.inputs = {S("dz", step) + T('l', l) + T('r', r), act_in(l, c),
                    ParamKey(l, false) + T('r', r) + T('c', c)};
        t.outputs = {S("gw", step) + T('l', l) + T('r', r) + T('c', c)};
        if (c == 0 && cuts[size_t(l)].bias)
          t.outputs.push_back(S("gb", step) + T('l', l) + T('r', r));
        if (l > 0) t.outputs.push_back(S("dap", step) + T('l', l) + T('r', r) + T('c', c));
        out->push_back(std::move(t));
      }
    }
    if (l == 0) continue;
    for (int64_t c = 0; c < nc; ++c) {
      TaskSpec t = Base(step, rows);
      t.key = S("bact", step) + T('l', l) + T('c', c);
      t.type = TaskType::kBackward;
      t.op = TaskOp::kTileInputGrad;
      t.layer = l;
      t.c0 = cc[c], t.c1 = cc[c + 1];
      t.parts = static_cast<int>(nr);
      for (int64_t r = 0; r < nr; ++r)
        t.inputs.push_back(S("dap", step) + T('l', l) + T('r', r) + T('c', c));
      t.inputs.push_back(pre(l - 1, c));
      t.outputs = {S("dz", step) + T('l', l - 1) + T('r', c)};
      out->push_back(std::move(t));
    }
  }
}

}  // namespace acan::nn
