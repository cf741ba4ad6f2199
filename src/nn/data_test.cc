#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>

#include "nn/csv.h"
#include "nn/dataset.h"
#include "nn/idx.h"

namespace acan::nn {
namespace {

std::string Temp(const std::string& name) { return testing::TempDir() + "/" + name; }

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

void WriteGz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

TEST(CsvTest, ParsesRegressionWithHeader) {
  CsvOptions opts;
  Result<Dataset> d = ParseCsv("a,b,target\n1,2,3\n 4 , 5.5 ,-6e-1\r\n\n", "r.csv", opts);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->rows, 2);
  EXPECT_EQ(d->features, 2);
  EXPECT_EQ(d->x, (std::vector<float>{1, 2, 4, 5.5f}));
  EXPECT_EQ(d->y, (std::vector<float>{3, -0.6f}));
}

TEST(CsvTest, ParsesClassificationWithoutHeader) {
  CsvOptions opts;
  opts.classification = true;
  Result<Dataset> d = ParseCsv("0.5,0.25,2\n1,1,0\n", "c.csv", opts);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_TRUE(d->classification);
  EXPECT_EQ(d->classes, 3);
  EXPECT_EQ(d->y, (std::vector<float>{2, 0}));
  Result<Dataset> bad = ParseCsv("0.5,0.25,2.5\n", "c.csv", opts);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("c.csv:1:3"), std::string::npos) << bad.status().message();
}

TEST(CsvTest, RaggedRowNamesFileAndRow) {
  Result<Dataset> d = ParseCsv("1,2,3\n4,5\n", "rag.csv", CsvOptions{});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("rag.csv:2"), std::string::npos) << d.status().message();
  EXPECT_NE(d.status().message().find("2 columns, expected 3"), std::string::npos);
}

TEST(CsvTest, NonNumericCellNamesRowColumnAndByte) {
  Result<Dataset> d = ParseCsv("1,2,3\n4,x5,6\n", "nn.csv", CsvOptions{});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("nn.csv:2:2 (byte 8)"), std::string::npos)
      << d.status().message();
  EXPECT_NE(d.status().message().find("\"x5\""), std::string::npos);
}

TEST(CsvTest, ReadsAFileAndReportsMissingOnes) {
  Write(Temp("d.csv"), "1,2\n3,4\n");
  Result<Dataset> d = ReadCsv(Temp("d.csv"), CsvOptions{});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->rows, 2);
  EXPECT_TRUE(ReadCsv(Temp("missing.csv"), CsvOptions{}).status().IsNotFound());
  Result<Dataset> folder = ReadCsv(testing::TempDir(), CsvOptions{});
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.status().message().find("is a directory"), std::string::npos)
      << folder.status().message();
}

std::string Images(uint32_t n, uint32_t h, uint32_t w) {
  std::string s = Be32(0x803) + Be32(n) + Be32(h) + Be32(w);
  for (uint32_t i = 0; i < n * h * w; ++i) s.push_back(static_cast<char>(i * 51));
  return s;
}
std::string Labels(uint32_t n) {
  std::string s = Be32(0x801) + Be32(n);
  for (uint32_t i = 0; i < n; ++i) s.push_back(static_cast<char>(i % 3));
  return s;
}

TEST(IdxTest, ReadsPlainAndGzip) {
  Write(Temp("i.idx"), Images(4, 2, 3));
  WriteGz(Temp("l.idx.gz"), Labels(4));
  Result<Dataset> d = ReadIdxDataset(Temp("i.idx"), Temp("l.idx.gz"));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->rows, 4);
  EXPECT_EQ(d->features, 6);
  EXPECT_EQ(d->classes, 3);
  EXPECT_FLOAT_EQ(d->x[1], 51);  // as stored; LoadDataset scales
  EXPECT_FLOAT_EQ(d->x[5], 255);
  EXPECT_EQ(d->y, (std::vector<float>{0, 1, 2, 0}));
}

TEST(IdxTest, WrongMagicIsAClearError) {
  Result<IdxArray> a = ParseIdx(std::vector<uint8_t>{0, 0, 8, 1, 0, 0, 0, 0}, "l.idx", 3);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("l.idx: byte 0"), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("0x00000801"), std::string::npos);
  EXPECT_NE(a.status().message().find("0x00000803"), std::string::npos);
}

TEST(IdxTest, TruncatedFilesAreClearErrors) {
  std::string img = Images(4, 2, 3);
  img.resize(img.size() - 5);
  std::vector<uint8_t> bytes(img.begin(), img.end());
  Result<IdxArray> a = ParseIdx(bytes, "t.idx", 3);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(a.status().message().find("truncated"), std::string::npos);
  EXPECT_NE(a.status().message().find("from byte 16"), std::string::npos);
  a = ParseIdx(std::vector<uint8_t>{0, 0, 8, 3, 0, 0}, "h.idx", 3);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("header"), std::string::npos);
  // A truncated gzip stream.
  WriteGz(Temp("full.gz"), Images(50, 10, 10));
  std::ifstream in(Temp("full.gz"), std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Write(Temp("cut.gz"), gz.substr(0, gz.size() / 2));
  Result<std::vector<uint8_t>> raw = ReadMaybeGzip(Temp("cut.gz"));
  if (raw.ok()) {  // zlib may hand back a prefix; the IDX layer then reports truncation
    Result<IdxArray> cut = ParseIdx(*raw, "cut.gz", 3);
    ASSERT_FALSE(cut.ok());
    EXPECT_NE(cut.status().message().find("truncated"), std::string::npos);
  } else {
    EXPECT_NE(raw.status().message().find("cut.gz"), std::string::npos);
  }
}

TEST(IdxTest, DimensionsPastSixtyFourBitsAreAnError) {
  // 2^31 x 2^31 x 4 wraps to 0 in 64 bits: it must not read as an empty array.
  std::string img = Be32(0x803) + Be32(0x80000000u) + Be32(0x80000000u) + Be32(4);
  Result<IdxArray> a = ParseIdx(std::vector<uint8_t>(img.begin(), img.end()), "big.idx", 3);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("big.idx: bytes 4..16"), std::string::npos)
      << a.status().message();
}

TEST(IdxTest, AFolderIsAClearError) {
  Result<std::vector<uint8_t>> raw = ReadMaybeGzip(testing::TempDir());
  ASSERT_FALSE(raw.ok());
  EXPECT_NE(raw.status().message().find("is a directory"), std::string::npos)
      << raw.status().message();
}

TEST(IdxTest, CountMismatch) {
  Write(Temp("i2.idx"), Images(4, 2, 3));
  Write(Temp("l2.idx"), Labels(3));
  Result<Dataset> d = ReadIdxDataset(Temp("i2.idx"), Temp("l2.idx"));
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("4 images"), std::string::npos);
}

TEST(DatasetTest, SyntheticIsDeterministicAndShuffleIsSeeded) {
  Dataset a = MakeSynthetic(100, 44, 1, false, 42);
  Dataset b = MakeSynthetic(100, 44, 1, false, 42);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  EXPECT_NE(MakeSynthetic(100, 44, 1, false, 43).x, a.x);
  Batcher b1(&a, 8, true, 42), b2(&a, 8, true, 42);
  EXPECT_EQ(b1.BatchesPerEpoch(), 13);
  EXPECT_EQ(b1.BatchRows(12), 4);
  EXPECT_EQ(b1.Get(3).x, b2.Get(3).x);
  EXPECT_NE(b1.EpochOrder(0), b1.EpochOrder(1));
  Batcher plain(&a, 8, false, 42);
  Batch first = plain.Get(0);
  EXPECT_EQ(first.x[0], a.x[0]);
}

}  // namespace
}  // namespace acan::nn
