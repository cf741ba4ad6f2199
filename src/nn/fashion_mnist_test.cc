// Runs only where the Debian package dataset-fashion-mnist is installed.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "nn/idx.h"
#include "nn/trainer.h"

namespace acan::nn {
namespace {

TEST(FashionMnistTest, LoadsAndTrains) {
  if (!std::filesystem::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  JobConfig job;
  job.model.layers = {784, 64, 10};
  job.model.activation = Activation::kRelu;
  job.model.loss = LossKind::kSoftmaxCrossEntropy;
  job.model.init = "kaiming_uniform";
  job.data.source = DataSource::kFashionMnist;
  job.train.batch = 32;
  job.train.lr = 0.05;
  job.train.epochs = 1;
  Result<Dataset> full = LoadDataset(job);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->rows, 60000);
  EXPECT_EQ(full->features, 784);
  EXPECT_EQ(full->classes, 10);
  Result<Dataset> raw = LoadFashionMnist(kFashionMnistDir, false);  // as stored: 0..255
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->rows, 10000);
  EXPECT_EQ(*std::max_element(raw->x.begin(), raw->x.end()), 255.0f);
  Result<std::optional<Dataset>> test = LoadTestDataset(job, *full);  // scaled as training
  ASSERT_TRUE(test.ok() && test->has_value());
  EXPECT_EQ((**test).rows, 10000);

  job.data.limit = 6000;
  Result<Dataset> part = LoadDataset(job);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->rows, 6000);
  auto trainer = *ReferenceTrainer::Create(job, *InitialModel(job), *part);
  Result<EpochReport> e = trainer->Epoch();
  ASSERT_TRUE(e.ok());
  Result<EvalReport> eval = Evaluate(trainer->CurrentModel(), **test, job);
  ASSERT_TRUE(eval.ok());
  EXPECT_GT(eval->accuracy, 0.65);
}

}  // namespace
}  // namespace acan::nn
