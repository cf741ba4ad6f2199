#include "nn/row_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "nn/dataset.h"

namespace acan::nn {
namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) {
  const std::string dir =
      testing::TempDir() + "/row_cache_" + name + "_" + std::to_string(::getpid());
  fs::remove_all(dir);
  return dir;
}

JobConfig SyntheticJob(int64_t samples, uint64_t seed = 7) {
  JobConfig job;
  job.model.layers = {12, 8, 3};
  job.model.loss = LossKind::kSoftmaxCrossEntropy;
  job.data.samples = samples;
  job.train.seed = seed;
  return job;
}

std::vector<float> Copy(std::span<const float> s) { return {s.begin(), s.end()}; }

// The one file of the cache directory.
std::string OnlyFile(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().string());
  EXPECT_EQ(files.size(), 1u);
  return files.empty() ? "" : files[0];
}

void Poke(const std::string& path, std::streamoff at, char byte) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(at);
  f.put(byte);
}

TEST(RowCacheTest, TheFirstLoadWritesTheFileAndEveryLoadMapsTheSameRows) {
  const JobConfig job = SyntheticJob(300);
  Result<Dataset> plain = LoadDataset(job);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  const std::string dir = FreshDir("first");
  std::string note;
  Result<CachedRows> first = LoadDatasetShared(job, dir, &note);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(note, "");
  EXPECT_TRUE(first->data.mapped.has_value());  // the writer maps its file too
  EXPECT_TRUE(first->data.x.empty());
  EXPECT_EQ(first->sha256, DataSha256(*plain));
  const std::string file = OnlyFile(dir);
  EXPECT_EQ(fs::path(file).filename().string(), RowCacheKey(job) + ".rows");

  Result<std::optional<CachedRows>> again = MapRowCache(dir, RowCacheKey(job));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_TRUE(again->has_value());
  const Dataset& m = (*again)->data;
  EXPECT_EQ(m.rows, plain->rows);
  EXPECT_EQ(m.features, plain->features);
  EXPECT_EQ(m.classes, plain->classes);
  EXPECT_TRUE(m.classification);
  EXPECT_EQ(Copy(m.Features()), plain->x);
  EXPECT_EQ(Copy(m.Targets()), plain->y);
  EXPECT_EQ((*again)->sha256, DataSha256(*plain));

  // The mini-batches made from the mapping are those made from memory.
  Batcher a(&m, 32, true, 7), b(&*plain, 32, true, 7);
  for (int64_t step : {0, 3, 9, 10, 17}) {
    Batch x = a.Get(step), y = b.Get(step);
    EXPECT_EQ(x.x, y.x) << "step " << step;
    EXPECT_EQ(x.t, y.t) << "step " << step;
  }
  // A copy of the value shares the mapping and outlives the original.
  Dataset copy;
  {
    Dataset tmp = m;
    copy = tmp;
  }
  again->reset();
  EXPECT_EQ(Copy(copy.Features()), plain->x);
  fs::remove_all(dir);
}

TEST(RowCacheTest, StandardisationFiguresAndTruncationSurviveTheMapping) {
  JobConfig job = SyntheticJob(200);
  job.data.standardize = true;
  Result<Dataset> plain = LoadDataset(job);
  ASSERT_TRUE(plain.ok());
  const std::string dir = FreshDir("stats");
  Result<CachedRows> rows = LoadDatasetShared(job, dir);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_TRUE(rows->data.mapped.has_value());
  EXPECT_EQ(rows->data.feature_mean, plain->feature_mean);
  EXPECT_EQ(rows->data.feature_std, plain->feature_std);
  Dataset cut = rows->data;
  cut.Truncate(50);
  plain->Truncate(50);
  EXPECT_EQ(Copy(cut.Features()), plain->x);
  EXPECT_EQ(Copy(cut.Targets()), plain->y);
  EXPECT_EQ(DataSha256(cut), DataSha256(*plain));
  fs::remove_all(dir);
}

TEST(RowCacheTest, TheKeyFollowsWhatTheRowsAreMadeFrom) {
  const std::string k = RowCacheKey(SyntheticJob(100, 7));
  EXPECT_EQ(k, RowCacheKey(SyntheticJob(100, 7)));
  EXPECT_NE(k, RowCacheKey(SyntheticJob(101, 7)));
  EXPECT_NE(k, RowCacheKey(SyntheticJob(100, 8)));
  JobConfig other = SyntheticJob(100, 7);
  other.train.lr = 0.5;  // not read by LoadDataset
  other.runtime.handlers = 9;
  EXPECT_EQ(k, RowCacheKey(other));
  other.data.standardize = true;
  EXPECT_NE(k, RowCacheKey(other));

  // A data file that changes makes another key.
  const std::string csv =
      testing::TempDir() + "/row_cache_key_" + std::to_string(::getpid()) + ".csv";
  { std::ofstream(csv) << "1,2,0\n3,4,1\n"; }
  JobConfig job;
  job.model.layers = {2, 2};
  job.model.loss = LossKind::kSoftmaxCrossEntropy;
  job.data.source = DataSource::kCsv;
  job.data.path = csv;
  const std::string before = RowCacheKey(job);
  { std::ofstream(csv) << "1,2,0\n3,4,1\n5,6,0\n"; }
  EXPECT_NE(before, RowCacheKey(job));
  fs::remove(csv);
}

TEST(RowCacheTest, ADamagedFileIsNamedAndNeverHandsOutWrongRows) {
  const JobConfig job = SyntheticJob(100);
  const std::string key = RowCacheKey(job);
  const std::string dir = FreshDir("damaged");
  ASSERT_TRUE(LoadDatasetShared(job, dir).ok());
  const std::string file = OnlyFile(dir);
  const auto size = static_cast<std::streamoff>(fs::file_size(file));

  // A flipped byte in the rows: the hash says so, and the next load writes a good file again.
  Poke(file, 4096 + 17, 0x55);
  Result<std::optional<CachedRows>> m = MapRowCache(dir, key);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE((m.status().code() == StatusCode::kDataLoss)) << m.status().ToString();
  EXPECT_NE(m.status().message().find(file), std::string::npos) << m.status().ToString();
  EXPECT_NE(m.status().message().find("SHA-256"), std::string::npos) << m.status().ToString();
  std::string note;
  Result<CachedRows> reloaded = LoadDatasetShared(job, dir, &note);
  ASSERT_TRUE(reloaded.ok());
  EXPECT_NE(note.find("loaded again"), std::string::npos) << note;
  EXPECT_EQ(reloaded->sha256, DataSha256(*LoadDataset(job)));
  ASSERT_TRUE(MapRowCache(dir, key).ok());

  // A file cut short, a header that promises more rows, and a file that is not one.
  fs::resize_file(file, size - 4);
  m = MapRowCache(dir, key);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("promises"), std::string::npos) << m.status().ToString();
  ASSERT_TRUE(LoadDatasetShared(job, dir).ok());
  Poke(file, 8, 0x7f);  // rows: 100 -> 127
  m = MapRowCache(dir, key);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE((m.status().code() == StatusCode::kDataLoss)) << m.status().ToString();
  Poke(file, 8 + 7, 0x7f);  // rows: a huge number, no allocation or read beyond the file
  m = MapRowCache(dir, key);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("malformed"), std::string::npos) << m.status().ToString();
  Poke(file, 0, 'X');
  m = MapRowCache(dir, key);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("not a row cache file"), std::string::npos);
  fs::resize_file(file, 10);
  m = MapRowCache(dir, key);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("shorter than"), std::string::npos);
  // No file: nothing cached, not an error.
  fs::remove(file);
  m = MapRowCache(dir, key);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->has_value());
  fs::remove_all(dir);
}

TEST(RowCacheTest, ACacheThatCannotBeWrittenLeavesTheRowsInMemory) {
  const JobConfig job = SyntheticJob(50);
  const std::string blocker = FreshDir("blocker");
  { std::ofstream(blocker) << "a file where the directory should be"; }
  std::string note;
  Result<CachedRows> rows = LoadDatasetShared(job, blocker + "/cache", &note);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_FALSE(rows->data.mapped.has_value());
  EXPECT_EQ(rows->sha256, DataSha256(rows->data));
  EXPECT_NE(note.find("cannot create the row cache directory"), std::string::npos) << note;
  EXPECT_NE(note.find(blocker), std::string::npos) << note;
  fs::remove(blocker);
  // No directory: LoadDataset and the hash.
  rows = LoadDatasetShared(job, "");
  ASSERT_TRUE(rows.ok());
  EXPECT_FALSE(rows->data.mapped.has_value());
}

}  // namespace
}  // namespace acan::nn
