#include "nn/trainer.h"

#include <gtest/gtest.h>

namespace acan::nn {
namespace {

// The design note's feasibility experiment: 44-44-1, tanh, mse, batch 1, 100 synthetic samples.
JobConfig Feasibility(Strategy strategy, int64_t task_size) {
  JobConfig job;  // JobConfig's defaults are that experiment (DESIGN.md section 6a)
  job.partition.strategy = strategy;
  job.partition.task_size = task_size;
  return job;
}

class Feasibility_ : public testing::TestWithParam<std::pair<Strategy, int64_t>> {};

TEST_P(Feasibility_, LossFallsWithinTwoEpochs) {
  const JobConfig job = Feasibility(GetParam().first, GetParam().second);
  Result<Model> init = InitialModel(job);
  ASSERT_TRUE(init.ok());
  Result<Dataset> data = LoadDataset(job);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  Result<EvalReport> before = Evaluate(*init, *data, job);
  ASSERT_TRUE(before.ok());
  auto trainer = ReferenceTrainer::Create(job, *init, *data);
  ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
  Result<std::vector<EpochReport>> epochs = (*trainer)->Train();
  ASSERT_TRUE(epochs.ok()) << epochs.status().ToString();
  ASSERT_EQ(epochs->size(), 2u);
  EXPECT_EQ((*epochs)[0].steps, 100);
  EXPECT_LT((*epochs)[1].loss, (*epochs)[0].loss);
  Result<EvalReport> after = (*trainer)->Evaluate();
  ASSERT_TRUE(after.ok());
  EXPECT_LT(after->loss, 0.7 * before->loss) << "before " << before->loss;
}

INSTANTIATE_TEST_SUITE_P(Strategies, Feasibility_,
                         testing::Values(std::make_pair(Strategy::kData, 0),
                                         std::make_pair(Strategy::kTiles, 11),
                                         std::make_pair(Strategy::kPipeline, 0),
                                         std::make_pair(Strategy::kChain, 1)));

TEST(TrainerTest, ClassificationReportsAccuracyAndTaskSizeCanChange) {
  JobConfig job;
  job.model.layers = {10, 16, 3};
  job.model.activation = Activation::kRelu;
  job.model.loss = LossKind::kSoftmaxCrossEntropy;
  job.model.init = "kaiming_uniform";
  job.data.samples = 300;
  job.train.batch = 16;
  job.train.lr = 0.2;
  job.train.momentum = 0.9;
  job.train.epochs = 5;
  job.partition.strategy = Strategy::kData;
  job.partition.task_size = 4;
  auto trainer = *ReferenceTrainer::Create(job, *InitialModel(job), *LoadDataset(job));
  Result<EpochReport> first = trainer->Epoch();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(trainer->SetTaskSize(7).ok());
  Result<EpochReport> e = first;
  for (int i = 0; i < 4; ++i) e = trainer->Epoch();
  ASSERT_TRUE(e.ok());
  EXPECT_GT(e->accuracy, first->accuracy);
  EXPECT_GT(e->accuracy, 0.8);
  EXPECT_NEAR(trainer->Evaluate()->accuracy, e->accuracy, 0.1);
}

TEST(TrainerTest, RejectsMismatchedData) {
  JobConfig job;
  job.model.layers = {3, 2};
  Dataset d = MakeSynthetic(10, 4, 2, false, 1);
  auto t = ReferenceTrainer::Create(job, *InitialModel(job), d);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("4 features"), std::string::npos);
}

// A chain runs its mini-batches one after another on the whole model, so whatever its length the
// weights are bitwise those of the data strategy with one micro-batch per step: momentum, a last
// short mini-batch, chains cut at the epoch's end and a learning rate that decays inside a chain.
TEST(TrainerTest, ChainIsBitwiseTheDataStrategy) {
  struct Case {
    JobConfig job;
    std::vector<int64_t> chain_sizes;
  };
  std::vector<Case> cases;
  {
    JobConfig toy = Feasibility(Strategy::kData, 0);
    toy.train.lr_decay = 0.9;
    toy.train.lr_decay_steps = 5;  // decays inside chains of 7 and across epochs
    cases.push_back({toy, {1, 7, 0, 100, 250}});
  }
  {
    JobConfig c;
    c.model.layers = {10, 16, 8, 3};
    c.model.activation = Activation::kRelu;
    c.model.loss = LossKind::kSoftmaxCrossEntropy;
    c.model.init = "kaiming_uniform";
    c.data.samples = 300;  // 19 mini-batches of 16, the last of 12
    c.train.batch = 16;
    c.train.lr = 0.2;
    c.train.momentum = 0.9;
    c.train.epochs = 3;
    cases.push_back({c, {1, 3, 4}});
  }
  for (const Case& k : cases) {
    Model init = *InitialModel(k.job);
    Dataset data = *LoadDataset(k.job);
    auto plain = *ReferenceTrainer::Create(k.job, init, data);
    std::vector<EpochReport> want = *plain->Train();
    const std::string want_sha = ModelSha256(plain->CurrentModel());
    for (int64_t size : k.chain_sizes) {
      SCOPED_TRACE("chain of " + std::to_string(size) + ", batch " +
                   std::to_string(k.job.train.batch));
      JobConfig job = k.job;
      job.partition.strategy = Strategy::kChain;
      job.partition.task_size = size;
      auto chain = ReferenceTrainer::Create(job, init, data);
      ASSERT_TRUE(chain.ok()) << chain.status().ToString();
      Result<std::vector<EpochReport>> got = (*chain)->Train();
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(ModelSha256((*chain)->CurrentModel()), want_sha);
      ASSERT_EQ(got->size(), want.size());
      for (size_t e = 0; e < want.size(); ++e) {
        EXPECT_NEAR((*got)[e].loss, want[e].loss, 1e-6 * std::max(1.0, want[e].loss));
        EXPECT_EQ((*got)[e].accuracy, want[e].accuracy);
      }
    }
  }
}

TEST(TrainerTest, ChainDefaultsToAFewHundredToySteps) {
  const JobConfig toy = Feasibility(Strategy::kChain, 0);
  EXPECT_EQ(Plan::ChainSteps(toy, 100), 100);  // at most an epoch
  EXPECT_EQ(Plan::ChainSteps(toy, 100000), (int64_t{1} << 19) / (45 * 44 + 45));
  JobConfig mlp = toy;
  mlp.model.layers = {784, 1024, 1024, 10};
  mlp.train.batch = 64;
  EXPECT_EQ(Plan::ChainSteps(mlp, 60000), 1);
  EXPECT_EQ(Plan::StepBatch(mlp, 3, 60000), 192);
  auto trainer = *ReferenceTrainer::Create(toy, *InitialModel(toy), *LoadDataset(toy));
  EXPECT_EQ(trainer->BatchesPerEpoch(), 1);
  EXPECT_FALSE(trainer->SetTaskSize(3).ok());
}

}  // namespace
}  // namespace acan::nn
