#include "nn/trainer.h"

#include <gtest/gtest.h>

namespace acan::nn {
namespace {

// The design note's feasibility experiment: 44-44-1, tanh, mse, batch 1, 100 synthetic samples.
JobConfig Feasibility(Strategy strategy, int64_t task_size) {
  Result<JobConfig> job = ParseJobString(R"(
[model]
layers = [44, 44, 1]
activation = "tanh"
loss = "mse"
[data]
source = "synthetic"
samples = 100
[train]
epochs = 2
batch = 1
lr = 0.05
seed = 42
)");
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  job->partition.strategy = strategy;
  job->partition.task_size = task_size;
  return *job;
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
                                         std::make_pair(Strategy::kPipeline, 0)));

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

}  // namespace
}  // namespace acan::nn
