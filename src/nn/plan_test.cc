// Every strategy and task size against a plain, unpartitioned double-precision computation, and
// bitwise reproducibility of a plan, whatever order a dataflow executor runs its tasks in.
#include "nn/plan.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "nn/dataset.h"
#include "nn/executor.h"
#include "nn/rng.h"
#include "nn/trainer.h"

namespace acan::nn {
namespace {

struct PlainResult {
  double loss = 0;
  std::vector<std::vector<double>> gw, gb;
};

double Act(Activation a, double z) {
  switch (a) {
    case Activation::kRelu:
      return z > 0 ? z : 0;
    case Activation::kTanh:
      return std::tanh(z);
    case Activation::kSigmoid:
      return 1 / (1 + std::exp(-z));
    case Activation::kIdentity:
      return z;
  }
  return z;
}
double ActGrad(Activation a, double h) {
  switch (a) {
    case Activation::kRelu:
      return h > 0 ? 1 : 0;
    case Activation::kTanh:
      return 1 - h * h;
    case Activation::kSigmoid:
      return h * (1 - h);
    case Activation::kIdentity:
      return 1;
  }
  return 1;
}

// The textbook computation: whole batch, loops, double.
PlainResult Plain(const Model& m, const Batch& b, const JobConfig& job) {
  const int L = m.NumLayers();
  const auto& w = m.widths;
  const int64_t B = b.rows;
  std::vector<std::vector<double>> h(L + 1);
  h[0].assign(b.x.begin(), b.x.end());
  for (int l = 0; l < L; ++l) {
    h[l + 1].assign(B * w[l + 1], 0);
    for (int64_t r = 0; r < B; ++r)
      for (int64_t o = 0; o < w[l + 1]; ++o) {
        double z = m.biases[l][o];
        for (int64_t i = 0; i < w[l]; ++i) z += m.weights[l][o * w[l] + i] * h[l][r * w[l] + i];
        h[l + 1][r * w[l + 1] + o] = l + 1 < L ? Act(job.model.activation, z) : z;
      }
  }
  PlainResult res;
  const int64_t O = w.back();
  std::vector<double> dz(B * O);
  for (int64_t r = 0; r < B; ++r) {
    const double* z = &h[L][r * O];
    if (job.model.loss == LossKind::kMse) {
      for (int64_t o = 0; o < O; ++o) {
        const double d = z[o] - b.t[r * O + o];
        res.loss += 0.5 * d * d / B;
        dz[r * O + o] = d / B;
      }
    } else {
      double mx = *std::max_element(z, z + O), s = 0;
      for (int64_t o = 0; o < O; ++o) s += std::exp(z[o] - mx);
      const int64_t label = static_cast<int64_t>(b.t[r]);
      res.loss += (std::log(s) - (z[label] - mx)) / B;
      for (int64_t o = 0; o < O; ++o) dz[r * O + o] = (std::exp(z[o] - mx) / s - (o == label)) / B;
    }
  }
  res.gw.resize(L);
  res.gb.resize(L);
  for (int l = L - 1; l >= 0; --l) {
    res.gw[l].assign(w[l + 1] * w[l], 0);
    res.gb[l].assign(w[l + 1], 0);
    std::vector<double> da(B * w[l], 0);
    for (int64_t r = 0; r < B; ++r)
      for (int64_t o = 0; o < w[l + 1]; ++o) {
        const double d = dz[r * w[l + 1] + o];
        res.gb[l][o] += d;
        for (int64_t i = 0; i < w[l]; ++i) {
          res.gw[l][o * w[l] + i] += d * h[l][r * w[l] + i];
          da[r * w[l] + i] += d * m.weights[l][o * w[l] + i];
        }
      }
    for (int64_t i = 0; i < B * w[l]; ++i) da[i] *= ActGrad(job.model.activation, h[l][i]);
    dz = std::move(da);
  }
  return res;
}

double RelErr(const std::vector<float>& got, const std::vector<double>& want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return diff / std::max(scale, 1e-30);
}

struct Case {
  Strategy strategy;
  int64_t task_size;
  int64_t stages;
  LossKind loss;
  std::vector<TileBand> bands = {};  // tiles cut in bands of different edges
};

JobConfig MakeJob(const Case& c) {
  JobConfig job;
  job.model.layers = {7, 9, 6, 4};
  job.model.activation = Activation::kTanh;
  job.model.loss = c.loss;
  job.train.batch = 10;
  job.train.lr = 0.1;
  job.train.momentum = 0.5;  // step 0's velocity output is exactly the reduced gradient
  job.data.samples = 25;
  job.partition.strategy = c.strategy;
  job.partition.task_size = c.task_size;
  job.partition.stages = c.stages;
  job.partition.tile_bands = c.bands;
  return job;
}

class PlanCase : public testing::TestWithParam<Case> {};

TEST_P(PlanCase, MatchesPlainComputation) {
  const JobConfig job = MakeJob(GetParam());
  const bool ce = job.model.loss == LossKind::kSoftmaxCrossEntropy;
  Dataset data = MakeSynthetic(25, 7, 4, ce, 3);
  Model init = *InitModel(job.model.layers, "xavier_uniform", 5);
  for (auto& b : init.biases)
    for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1f * static_cast<float>(i % 3) - 0.1f;
  auto trainer = ReferenceTrainer::Create(job, init, data);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  Batcher batcher(&data, job.train.batch, job.data.shuffle, job.train.seed);
  const PlainResult want = Plain(init, batcher.Get(0), job);
  Result<StepReport> step = (*trainer)->Step();
  ASSERT_TRUE(step.ok()) << step.status().ToString();
  EXPECT_NEAR(step->loss, want.loss, 1e-5 * want.loss);
  // The velocities (the tiles strategy's are in tiles), placed into whole tensors.
  std::map<std::string, std::vector<float>> velocity;
  for (const ShardSpec& s : (*trainer)->plan().shards()) {
    Buffer v = (*trainer)->StateTensor(s.momentum_key);
    ASSERT_TRUE(v) << s.momentum_key;
    std::vector<float>& whole = velocity[s.name];
    whole.resize(s.tensor_shape[0] * (s.bias ? 1 : s.tensor_shape[1]));
    s.Place(*v, &whole);
  }
  for (int l = 0; l < init.NumLayers(); ++l) {
    EXPECT_LE(RelErr(velocity[WeightName(l)], want.gw[l]), 1e-5) << "layer " << l;
    EXPECT_LE(RelErr(velocity[BiasName(l)], want.gb[l]), 1e-5) << "layer " << l;
  }
}

// Runs steps with a dataflow executor that picks ready tasks in a seeded random order.
Model RunShuffled(const JobConfig& job, const Model& init, Dataset& data, int steps,
                  uint64_t seed) {
  Plan plan = *Plan::Create(job);
  std::map<std::string, Buffer> state;
  for (auto& [k, v] : plan.InitialState(init)) state[k] = MakeBuffer(std::move(v));
  Batcher batcher(&data, job.train.batch, job.data.shuffle, job.train.seed);
  Rng rng(seed);
  for (int s = 0; s < steps; ++s) {
    Batch b = batcher.Get(s);
    std::map<std::string, Buffer> t;
    for (auto& [k, v] : plan.StepInputs(s, b.rows, b.x, b.t)) t[k] = MakeBuffer(std::move(v));
    std::vector<TaskSpec> pending = plan.StepTasks(s, b.rows);
    std::vector<TaskSpec> updates;
    while (!pending.empty()) {
      std::vector<size_t> ready;
      for (size_t i = 0; i < pending.size(); ++i) {
        bool ok = true;
        for (const auto& k : pending[i].inputs) ok = ok && (Plan::IsStateKey(k) || t.count(k));
        if (ok) ready.push_back(i);
      }
      EXPECT_FALSE(ready.empty());
      if (ready.empty()) return {};
      const size_t pick = ready[rng.Below(ready.size())];
      TaskSpec task = std::move(pending[pick]);
      pending.erase(pending.begin() + pick);
      // The spec travels as bytes, as it would through the space.
      TaskSpec decoded = *DecodeTask(EncodeTask(task));
      std::vector<std::span<const float>> in;
      for (const auto& k : decoded.inputs) in.emplace_back(Plan::IsStateKey(k) ? *state[k] : *t[k]);
      std::vector<std::vector<float>> out;
      EXPECT_TRUE(ExecuteTask(decoded, in, &out).ok());
      const std::vector<int64_t> sizes = OutputSizes(decoded);
      for (size_t i = 0; i < out.size(); ++i) {
        EXPECT_EQ(static_cast<int64_t>(out[i].size()), sizes[i]) << decoded.key;
        // Updates write the next version; version s stays readable until the step ends.
        (Plan::IsStateKey(decoded.outputs[i]) ? t["next." + decoded.outputs[i]]
                                              : t[decoded.outputs[i]]) =
            MakeBuffer(std::move(out[i]));
      }
    }
    for (auto& [k, v] : state) v = t.at("next." + k);
  }
  return plan.ModelFromState([&](const std::string& k) { return *state.at(k); });
}

TEST_P(PlanCase, BitwiseReproducibleInAnyDataflowOrder) {
  const JobConfig job = MakeJob(GetParam());
  Dataset data = MakeSynthetic(25, 7, 4, job.model.loss == LossKind::kSoftmaxCrossEntropy, 3);
  Model init = *InitModel(job.model.layers, "xavier_uniform", 5);
  auto a = *ReferenceTrainer::Create(job, init, data);
  auto b = *ReferenceTrainer::Create(job, init, data);
  for (int s = 0; s < 4; ++s) {
    ASSERT_TRUE(a->Step().ok());
    ASSERT_TRUE(b->Step().ok());
  }
  EXPECT_EQ(ModelSha256(a->CurrentModel()), ModelSha256(b->CurrentModel()));
  const Model shuffled = RunShuffled(job, init, data, 4, 99);
  EXPECT_EQ(shuffled.weights, a->CurrentModel().weights);
  EXPECT_EQ(shuffled.biases, a->CurrentModel().biases);
}

TEST_P(PlanCase, KeysAreValidUniqueAndProducedBeforeUse) {
  const JobConfig job = MakeJob(GetParam());
  Plan plan = *Plan::Create(job);
  const std::regex token("[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*");
  std::set<std::string> produced, task_keys;
  Dataset data = MakeSynthetic(10, 7, 4, false, 1);
  Batch b = Batcher(&data, 10, false, 1).Get(0);
  for (auto& [k, v] : plan.StepInputs(12, 10, b.x, b.t)) produced.insert(k);
  for (const TaskSpec& t : plan.StepTasks(12, 10)) {
    EXPECT_TRUE(std::regex_match(t.key, token)) << t.key;
    EXPECT_NE(t.key.find(".s12"), std::string::npos) << t.key;
    EXPECT_TRUE(task_keys.insert(t.key).second) << "duplicate task " << t.key;
    for (const auto& k : t.inputs) EXPECT_TRUE(Plan::IsStateKey(k) || produced.count(k)) << k;
    for (const auto& k : t.outputs) {
      EXPECT_TRUE(std::regex_match(k, token)) << k;
      if (!Plan::IsStateKey(k)) {
        EXPECT_TRUE(produced.insert(k).second) << "twice: " << k;
      }
    }
  }
  for (const auto& k : plan.MetricKeys(12, 10)) EXPECT_TRUE(produced.count(k)) << k;
}

std::vector<Case> Cases() {
  std::vector<Case> c;
  for (LossKind loss : {LossKind::kMse, LossKind::kSoftmaxCrossEntropy}) {
    for (int64_t ts : {1, 3, 4, 16}) c.push_back({Strategy::kTiles, ts, 0, loss});
    // Bands: wide tiles then narrow ones (every width of 7, 9, 6, 4 cut in both), and three bands
    // whose edges do not divide their widths.
    c.push_back({Strategy::kTiles, 0, 0, loss, {{4, 1, 0}, {1, 1, 0}}});
    c.push_back({Strategy::kTiles, 0, 0, loss, {{2, 3, 0}, {5, 2, 0}, {1, 1, 0}}});
    for (int64_t ts : {0, 1, 3, 10}) c.push_back({Strategy::kData, ts, 0, loss});
    for (int64_t ts : {0, 4}) {
      for (int64_t st : {0, 2}) c.push_back({Strategy::kPipeline, ts, st, loss});
    }
    // One mini-batch per chain: these drivers step the trainer one mini-batch at a time.
    c.push_back({Strategy::kChain, 1, 0, loss});
  }
  return c;
}

INSTANTIATE_TEST_SUITE_P(Strategies, PlanCase, testing::ValuesIn(Cases()), [](const auto& info) {
  const Case& c = info.param;
  std::string bands;
  for (const TileBand& b : c.bands)
    bands += "_e" + std::to_string(b.edge) + "x" + std::to_string(b.share);
  return std::string(ToString(c.strategy)) + "_ts" + std::to_string(c.task_size) + "_st" +
         std::to_string(c.stages) + bands + (c.loss == LossKind::kMse ? "_mse" : "_ce");
});

// What a handler makes from its own copy of the data (runtime/state/local_inputs.h) is the
// manager's tensor: the keys alone and each input made on its own agree with StepInputs, byte for
// byte.
TEST_P(PlanCase, OneInputByKeyIsTheStepInputsTensor) {
  const JobConfig job = MakeJob(GetParam());
  Plan plan = *Plan::Create(job);
  Dataset data = MakeSynthetic(10, 7, 4, false, 1);
  Batch b = Batcher(&data, 10, false, 1).Get(0);
  const std::vector<KeyedTensor> all = plan.StepInputs(12, 10, b.x, b.t);
  const std::vector<std::string> keys = plan.StepInputKeys(12, 10);
  ASSERT_EQ(keys.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(keys[i], all[i].first);
    auto one = plan.StepInput(12, 10, all[i].first, b.x, b.t);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    EXPECT_EQ(*one, all[i].second) << all[i].first;
  }
  EXPECT_EQ(plan.StepInput(12, 10, "x.s13", b.x, b.t).status().code(), StatusCode::kNotFound);
}

TEST(PlanTest, TaskSpecRoundTripsThroughBytes) {
  JobConfig job = MakeJob({Strategy::kTiles, 4, 0, LossKind::kMse});
  Plan plan = *Plan::Create(job);
  for (const TaskSpec& t : plan.StepTasks(3, 10)) {
    Result<TaskSpec> d = DecodeTask(EncodeTask(t));
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(EncodeTask(*d), EncodeTask(t));
  }
  EXPECT_FALSE(DecodeTask("{}").ok());
  EXPECT_FALSE(DecodeTask("not json").ok());
}

TEST(PlanTest, ExecutorChecksInputSizes) {
  JobConfig job = MakeJob({Strategy::kData, 0, 0, LossKind::kMse});
  Plan plan = *Plan::Create(job);
  TaskSpec t = plan.StepTasks(0, 10)[0];
  std::vector<float> small(3);
  std::vector<std::span<const float>> in(t.inputs.size(), std::span<const float>(small));
  std::vector<std::vector<float>> out;
  Status s = ExecuteTask(t, in, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("x.s0.m0"), std::string::npos) << s.message();
}

TEST(PlanTest, ShardsArePerTensorExceptTilesWhichAreShardedByTile) {
  JobConfig job = MakeJob({Strategy::kData, 4, 0, LossKind::kMse});
  Plan a = *Plan::Create(job, 2), b = *Plan::Create(job, 5);
  ASSERT_EQ(a.shards().size(), 6u);
  EXPECT_TRUE(a.SameShards(b));
  EXPECT_EQ(a.shards()[0].key, "param.l0.w");
  EXPECT_EQ(a.shards()[0].momentum_key, "mom.l0.w");
  EXPECT_EQ(a.shards()[1].name, "layers.0.bias");
  EXPECT_EQ(a.shards()[0].shape, (std::vector<int64_t>{9, 7}));

  // Layer 0 is 9 x 7: tiles of 4 make 3 x 2 weight tiles and 3 bias blocks, no two overlapping,
  // covering the tensor; a task reads its own tile's key and no other shard.
  job.partition.strategy = Strategy::kTiles;
  Plan t4 = *Plan::Create(job, 4), t5 = *Plan::Create(job, 5);
  EXPECT_FALSE(t4.SameShards(t5));
  std::map<std::string, std::vector<int>> covered;
  int layer0 = 0;
  for (const ShardSpec& s : t4.shards()) {
    std::vector<int>& c = covered[s.name];
    c.resize(s.tensor_shape[0] * (s.bias ? 1 : s.tensor_shape[1]));
    for (int64_t r = s.r0; r < s.r1; ++r)
      for (int64_t k = s.c0; k < s.c1; ++k) ++c[r * (s.bias ? 1 : s.tensor_shape[1]) + k];
    EXPECT_LE(s.r1 - s.r0, 4);
    EXPECT_LE(s.c1 - s.c0, 4);
    layer0 += s.layer == 0;
  }
  EXPECT_EQ(layer0, 3 * 2 + 3);
  for (const auto& [name, c] : covered)
    EXPECT_EQ(std::count(c.begin(), c.end(), 1), static_cast<long>(c.size())) << name;
  EXPECT_EQ(t4.shards()[0].key, "param.l0.w.r0.c0");
  EXPECT_EQ(t4.shards()[0].momentum_key, "mom.l0.w.r0.c0");
  EXPECT_EQ(t4.shards()[1].key, "param.l0.w.r0.c1");
  EXPECT_EQ(t4.shards()[1].shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(t4.shards()[6].key, "param.l0.b.r0");
  std::set<std::string> keys;
  for (const ShardSpec& s : t4.shards()) keys.insert(s.key);
  for (const TaskSpec& task : t4.StepTasks(0, 10)) {
    for (const std::string& in : task.inputs) {
      if (Plan::IsStateKey(in) && !in.starts_with("mom.")) {
        EXPECT_TRUE(keys.count(in)) << in;
      }
    }
  }
  // Sliced and placed back, a model is itself.
  Model init = *InitModel(job.model.layers, "xavier_uniform", 5);
  std::map<std::string, std::vector<float>> state;
  for (auto& [k, v] : t4.InitialState(init)) state[k] = std::move(v);
  const Model back = t4.ModelFromState([&](const std::string& k) { return state.at(k); });
  EXPECT_EQ(back.weights, init.weights);
  EXPECT_EQ(back.biases, init.biases);
  // A tile that could not be read (an empty vector) leaves zeros, never a read past its end.
  const Model none = t4.ModelFromState([](const std::string&) { return std::vector<float>(); });
  EXPECT_EQ(none.weights[0], std::vector<float>(9 * 7, 0.0f));
}

// Tiles cut in bands: each width is cut where its bands' shares put it, each band in blocks of its
// own edge; the tiles of a layer then differ in shape, never overlap and cover every tensor; the
// loss's parts are the output's blocks, whatever their widths.
TEST(PlanTest, TilesCutInBandsDifferInSizeAndCoverEachTensorOnce) {
  JobConfig job = MakeJob({Strategy::kTiles, 0, 0, LossKind::kMse, {{4, 1, 0}, {2, 3, 0}}});
  job.model.layers = {16, 20, 4};
  Plan plan = *Plan::Create(job);
  // 20: band 0 over [0, 5) in blocks of 4, band 1 over [5, 20) in blocks of 2.
  EXPECT_EQ(plan.Cuts(20), (std::vector<int64_t>{0, 4, 5, 7, 9, 11, 13, 15, 17, 19, 20}));
  EXPECT_EQ(plan.Cuts(16), (std::vector<int64_t>{0, 4, 6, 8, 10, 12, 14, 16}));
  EXPECT_EQ(plan.Cuts(4), (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(plan.task_size(), 2);
  std::map<std::string, std::vector<int>> covered;
  std::set<std::vector<int64_t>> shapes;
  for (const ShardSpec& s : plan.shards()) {
    std::vector<int>& c = covered[s.name];
    c.resize(s.tensor_shape[0] * (s.bias ? 1 : s.tensor_shape[1]));
    for (int64_t r = s.r0; r < s.r1; ++r)
      for (int64_t k = s.c0; k < s.c1; ++k) ++c[r * (s.bias ? 1 : s.tensor_shape[1]) + k];
    if (!s.bias && s.layer == 0) shapes.insert(s.shape);
  }
  for (const auto& [name, c] : covered)
    EXPECT_EQ(std::count(c.begin(), c.end(), 1), static_cast<long>(c.size())) << name;
  EXPECT_TRUE(shapes.count({4, 4}) && shapes.count({4, 2}) && shapes.count({2, 4}) &&
              shapes.count({2, 2}) && shapes.count({1, 2}));
  int losses = 0;
  for (const TaskSpec& t : plan.StepTasks(0, 10)) {
    if (t.op != TaskOp::kLoss) continue;
    ++losses;
    EXPECT_EQ(t.part_edges, plan.Cuts(4));
    EXPECT_EQ(t.parts, 3);
    EXPECT_EQ(DecodeTask(EncodeTask(t))->part_edges, t.part_edges);
  }
  EXPECT_EQ(losses, 1);
  // A plan of another strategy ignores bands it cannot have (a job file refuses them).
  EXPECT_EQ(Plan::Create(MakeJob({Strategy::kData, 0, 0, LossKind::kMse}))->Cuts(20),
            (std::vector<int64_t>{0, 20}));
}

// A loss task whose part edges do not add up to its output is refused as bytes, not run.
TEST(PlanTest, ALossWhosePartEdgesDoNotFitIsRefused) {
  JobConfig job = MakeJob({Strategy::kTiles, 0, 0, LossKind::kMse, {{3, 1, 0}, {1, 1, 0}}});
  Plan plan = *Plan::Create(job);
  for (TaskSpec t : plan.StepTasks(0, 10)) {
    if (t.op != TaskOp::kLoss) continue;
    ASSERT_TRUE(DecodeTask(EncodeTask(t)).ok());
    for (auto edges : std::vector<std::vector<int64_t>>{
             {0, 2, 9}, {1, 2, 3, 4}, {0, 3, 3, 4}, {0, 1, 2, 3, 4}}) {
      TaskSpec bad = t;
      bad.part_edges = edges;
      EXPECT_EQ(DecodeTask(EncodeTask(bad)).status().code(), StatusCode::kInvalidArgument)
          << edges.size();
    }
  }
}

// Drawn a shard at a time (a manager that must not hold the model), the initial state is the one
// sliced from the whole model, key for key and bit for bit, whatever the shards; and the whole
// model is one stream of draws over every weight in order, as it always was (the generator skips
// ahead to a shard's rows, which must land where the stream would be).
TEST(PlanTest, TheInitialStateDrawnShardByShardIsTheWholeModelsSliced) {
  JobConfig job = MakeJob({Strategy::kData, 4, 0, LossKind::kMse});
  job.train.momentum = 0.9;
  const Model init = *InitModel(job.model.layers, "kaiming_uniform", 11);
  Rng stream(MixSeed(11, 0x1417));
  for (int l = 0; l < init.NumLayers(); ++l) {
    const auto a = static_cast<float>(std::sqrt(6.0 / double(job.model.layers[l])));
    for (float w : init.weights[l]) ASSERT_EQ(w, stream.Uniform(-a, a)) << "layer " << l;
  }
  const InitialWeights weights = *InitialWeights::Create(job.model.layers, "kaiming_uniform", 11);
  for (Strategy strategy : {Strategy::kData, Strategy::kTiles}) {
    job.partition.strategy = strategy;
    for (int64_t edge : {1, 4, 5, 64}) {
      SCOPED_TRACE(std::string(ToString(strategy)) + " edge " + std::to_string(edge));
      Plan plan = *Plan::Create(job, edge);
      std::map<std::string, std::vector<float>> whole, drawn;
      for (auto& [k, v] : plan.InitialState(init)) whole[k] = std::move(v);
      ASSERT_TRUE(plan.ForEachInitialShard(weights,
                                           [&](const std::string& k, std::vector<float> v) {
                                             EXPECT_TRUE(drawn.emplace(k, std::move(v)).second)
                                                 << k << " twice";
                                             return Status::Ok();
                                           })
                      .ok());
      EXPECT_EQ(drawn, whole);
    }
  }
}

// A list's parameters are its tensors whole, whatever their rank: the state a plan starts from is
// the model's own values (a conv2d weight [out, in, kh, kw] is a matrix of `out` rows of
// in * kh * kw; a row length of `in` made its rows overlapping windows of the drawn values), and
// the model read back from that state is the model.
TEST(PlanTest, AListsInitialStateIsItsTensorsWholeAndReadsBackTheSame) {
  for (Strategy strategy : {Strategy::kData, Strategy::kPipeline, Strategy::kChain}) {
    SCOPED_TRACE(std::string(ToString(strategy)));
    Result<JobConfig> job = ParseJobString(fmt::format(R"([model]
input_shape = [3, 8, 8]
loss = "softmax_cross_entropy"
init = "kaiming_uniform"
[[model.layer]]
type = "conv2d"
in_channels = 3
out_channels = 4
kernel_size = 3
[[model.layer]]
type = "conv2d"
in_channels = 4
out_channels = 5
kernel_size = [2, 3]
bias = false
[[model.layer]]
type = "flatten"
[[model.layer]]
type = "linear"
in_features = 100
out_features = 6
[data]
source = "synthetic"
samples = 16
[train]
batch = 8
momentum = 0.9
[partition]
strategy = "{}"
)",
                                                       ToString(strategy)));
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    const Model model = *InitialModel(*job);
    ASSERT_EQ(model.weights.size(), 3u);
    const Plan plan = *Plan::Create(*job, -1, 16);
    std::map<std::string, std::vector<float>> state;
    for (auto& [k, v] : plan.InitialState(model)) state[k] = std::move(v);
    for (const ShardSpec& s : plan.shards()) {
      const std::vector<float>& whole = (s.bias ? model.biases : model.weights)[s.layer];
      EXPECT_EQ(state.at(s.key), whole) << s.key;
      EXPECT_EQ(s.RowLength() * s.tensor_shape[0], static_cast<int64_t>(whole.size())) << s.key;
    }
    const Model back = plan.ModelFromState([&](const std::string& k) { return state.at(k); });
    EXPECT_EQ(back.weights, model.weights);
    EXPECT_EQ(back.biases, model.biases);
  }
}

}  // namespace
}  // namespace acan::nn
