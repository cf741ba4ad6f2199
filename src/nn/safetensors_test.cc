#include "nn/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "nn/model.h"

namespace acan::nn {
namespace {

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

// A file as another tool would write it: explicit header, little-endian floats.
std::string HandMade(const std::string& header, const std::vector<float>& data) {
  std::string out;
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += header;
  for (float f : data) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
  return out;
}

const std::string kHeader =
    R"({"__metadata__":{"format":"pt"},)"
    R"("layers.0.bias":{"dtype":"F32","shape":[2],"data_offsets":[24,32]},)"
    R"("layers.0.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";

TEST(SafetensorsTest, LoadsAHandMadeFile) {
  const std::string file = HandMade(kHeader, {1, 2, 3, 4, 5, 6, -1, -2});
  Result<TensorMap> t = ParseSafetensors(Bytes(file), "hand.safetensors");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ(t->at("layers.0.weight").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t->at("layers.0.weight").data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t->at("layers.0.bias").data, (std::vector<float>{-1, -2}));
  Result<Model> m = ModelFromTensors(*t, {3, 2}, "hand.safetensors");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->weights[0][5], 6.0f);
}

TEST(SafetensorsTest, RoundTripThroughAFile) {
  Result<Model> m = InitModel({5, 4, 3}, "xavier_uniform", 1);
  ASSERT_TRUE(m.ok());
  const std::string path = testing::TempDir() + "/acan_model.safetensors";
  ASSERT_TRUE(SaveModel(path, *m).ok());
  Result<Model> back = LoadModel(path, {5, 4, 3});
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->weights, m->weights);
  EXPECT_EQ(back->biases, m->biases);
  EXPECT_EQ(ModelSha256(*back), ModelSha256(*m));
  EXPECT_EQ(ModelSha256(*m).size(), 64u);
  // The header length is a multiple of 8 and the data follows it.
  std::ifstream f(path, std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
  // Wrong shapes for the configured model.
  Result<Model> wrong = LoadModel(path, {5, 6, 3});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("layers.0.weight"), std::string::npos);
  EXPECT_NE(wrong.status().message().find("[4, 5]"), std::string::npos);
  Result<Model> fewer = LoadModel(path, {5, 4});
  ASSERT_FALSE(fewer.ok());
  EXPECT_NE(fewer.status().message().find("unexpected tensor"), std::string::npos);
}

TEST(SafetensorsTest, Sha256OfKnownBytes) {
  TensorMap t;
  EXPECT_EQ(TensorsSha256(t), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(SafetensorsTest, CorruptHeaderIsAClearError) {
  std::string file = HandMade(kHeader, {1, 2, 3, 4, 5, 6, -1, -2});
  file[8] = '#';
  Result<TensorMap> t = ParseSafetensors(Bytes(file), "bad.safetensors");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("bad.safetensors"), std::string::npos);
  EXPECT_NE(t.status().message().find("JSON header"), std::string::npos);

  std::string huge = file;
  huge[7] = 0x10;  // header length far beyond the file
  t = ParseSafetensors(Bytes(huge), "bad.safetensors");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("header length"), std::string::npos);

  t = ParseSafetensors(Bytes("abc"), "short.safetensors");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("8-byte"), std::string::npos);
}

TEST(SafetensorsTest, TruncatedDataIsAClearError) {
  std::string file = HandMade(kHeader, {1, 2, 3, 4, 5, 6, -1, -2});
  file.resize(file.size() - 3);
  Result<TensorMap> t = ParseSafetensors(Bytes(file), "cut.safetensors");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(t.status().message().find("layers.0.bias"), std::string::npos);
  EXPECT_NE(t.status().message().find("[24, 32)"), std::string::npos);
  EXPECT_NE(t.status().message().find("truncated"), std::string::npos);
}

TEST(SafetensorsTest, WrongDtypeIsAClearError) {
  std::string header = kHeader;
  header.replace(header.find("F32"), 3, "F16");
  Result<TensorMap> t = ParseSafetensors(Bytes(HandMade(header, {1, 2, 3, 4, 5, 6, 7, 8})), "h.st");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("F16"), std::string::npos);
  EXPECT_NE(t.status().message().find("layers.0.bias"), std::string::npos);
}

TEST(SafetensorsTest, OverlapAndSizeMismatchAreErrors) {
  const std::string overlap = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  Result<TensorMap> t = ParseSafetensors(Bytes(HandMade(overlap, {1, 2, 3})), "o.st");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("overlap"), std::string::npos);
  const std::string mis = R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})";
  t = ParseSafetensors(Bytes(HandMade(mis, {1, 2})), "m.st");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("shape needs 12"), std::string::npos);
}

TEST(SafetensorsTest, MissingFileIsNotFound) {
  EXPECT_TRUE(ReadSafetensors("/nonexistent/x.safetensors").status().IsNotFound());
}

TEST(SafetensorsTest, AFolderIsAClearError) {
  Result<TensorMap> t = ReadSafetensors(testing::TempDir());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("is a directory"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace acan::nn
