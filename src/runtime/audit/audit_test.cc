// The audit log (audit.h): a chain its writers extend without overwriting one another, and a
// verifier that finds every kind of tampering (an altered, missing, reordered or inserted
// record, a chain cut short, another model) and names the first bad line.
#include "runtime/audit/audit.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "acan/space.h"
#include "nn/safetensors.h"
#include "space/nats/secure.h"

namespace acan::runtime {
namespace {

using json = nlohmann::json;

std::unique_ptr<Space> NewSpace() { return std::move(OpenSpace("mem:").value()); }

// A finished job's chain: a start, `n` version records, an end naming `model`.
std::vector<std::string> Chain(int n, const std::string& model = std::string(64, 'a')) {
  auto space = NewSpace();
  const Layout layout("job");
  {
    AuditLog log(space.get(), &layout, "m0");
    log.Append("job_start", {{"config_sha256", std::string(64, 'c')}});
    for (int i = 0; i < n; ++i) {
      log.AppendVersions("versions", {{"step", i}},
                         {{"l0.w", i + 1, Value::FromString("w" + std::to_string(i))}});
    }
    log.Append("job_end", {{"final_model_sha256", model}});
    EXPECT_TRUE(log.Flush().ok());
  }
  return ReadAuditChain(space.get(), layout).value();
}

// Re-hashes a record after a change, as a forger with the format would.
std::string Rehash(json r) {
  r.erase("hash");
  const std::string body = r.dump();
  r["hash"] = ValueSha256(Value::FromString(body));
  return r.dump();
}

TEST(AuditLogTest, AFinishedJobsChainVerifies) {
  const auto lines = Chain(5);
  ASSERT_EQ(lines.size(), 7u);
  AuditVerdict v = VerifyAuditLines(lines, {std::string(64, 'a')});
  EXPECT_TRUE(v.ok) << v.line << ": " << v.problem;
  EXPECT_EQ(v.records, 7);
  EXPECT_EQ(v.kinds["versions"], 5);
  const json r = json::parse(lines[3]);
  EXPECT_EQ(r["seq"], 4);
  EXPECT_EQ(r["by"], "m0");
  EXPECT_EQ(r["versions"][0]["shard"], "l0.w");
  EXPECT_EQ(r["versions"][0]["sha256"], ValueSha256(Value::FromString("w2")));
}

TEST(AuditLogTest, ManyShardsTakeNumberedPartsThatEachFitACell) {
  auto space = NewSpace();
  const Layout layout("job");
  std::vector<WrittenVersion> shards;
  for (int i = 0; i < 2000; ++i) {
    shards.push_back({"l" + std::to_string(i) + ".w", 7, Value::FromString(std::to_string(i))});
  }
  {
    AuditLog log(space.get(), &layout, "m0");
    log.AppendVersions("versions", {{"step", 6}}, std::move(shards));
    log.Append("job_end", {{"final_model_sha256", "x"}});
    ASSERT_TRUE(log.Flush().ok());
  }
  auto lines = ReadAuditChain(space.get(), layout).value();
  ASSERT_GT(lines.size(), 3u);
  EXPECT_TRUE(VerifyAuditLines(lines).ok);
  size_t entries = 0;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_LE(lines[i].size(), kMaxCellBytes);
    const json r = json::parse(lines[i]);
    EXPECT_EQ(r["step"], 6);
    EXPECT_EQ(r["part"], fmt::format("{}/{}", i + 1, lines.size() - 1));
    entries += r["versions"].size();
  }
  EXPECT_EQ(entries, 2000u);
}

TEST(AuditLogTest, WritersShareOneChainAndNothingFollowsTheEnd) {
  auto space = NewSpace();
  const Layout layout("job");
  EXPECT_FALSE(AuditChainEnded(space.get(), layout).value()) << "no chain yet";
  {
    AuditLog a(space.get(), &layout, "m0"), b(space.get(), &layout, "supervisor");
    std::thread ta([&] {
      for (int i = 0; i < 40; ++i) a.Append("versions", {{"step", i}});
    });
    std::thread tb([&] {
      for (int i = 0; i < 40; ++i) b.Append("handler_left", {{"handler", i}});
    });
    ta.join();
    tb.join();
    ASSERT_TRUE(a.Flush().ok());
    ASSERT_TRUE(b.Flush().ok());
    EXPECT_FALSE(AuditChainEnded(space.get(), layout).value()) << "80 records, no job_end";
    a.Append("job_end", {{"final_model_sha256", "x"}});
    ASSERT_TRUE(a.Flush().ok());
    b.Append("handler_left", {{"handler", 99}});  // after the end: not recorded
    ASSERT_TRUE(b.Flush().ok());
  }
  // A later writer (a successor) finds the head and still adds nothing after the end.
  {
    AuditLog c(space.get(), &layout, "m1");
    c.Append("lease", {});
    ASSERT_TRUE(c.Flush().ok());
  }
  auto lines = ReadAuditChain(space.get(), layout).value();
  ASSERT_EQ(lines.size(), 81u);
  EXPECT_TRUE(AuditChainEnded(space.get(), layout).value());
  AuditVerdict v = VerifyAuditLines(lines);
  EXPECT_TRUE(v.ok) << v.line << ": " << v.problem;
  EXPECT_EQ(v.kinds["versions"], 40);
  EXPECT_EQ(v.kinds["handler_left"], 40);
  EXPECT_EQ(json::parse(lines.back())["kind"], "job_end");
}

TEST(AuditLogTest, EveryKindOfTamperingIsFoundAtItsLine) {
  const std::vector<std::string> good = Chain(6);
  auto expect_bad = [](const std::vector<std::string>& lines, int64_t line,
                       const std::string& words, const std::string& model = "") {
    AuditVerdict v = VerifyAuditLines(lines, {model});
    EXPECT_FALSE(v.ok);
    EXPECT_EQ(v.line, line) << v.problem;
    EXPECT_NE(v.problem.find(words), std::string::npos) << v.problem;
  };
  // Altered: a field changed, hash left as it was.
  auto altered = good;
  json r = json::parse(altered[3]);
  r["step"] = 77;
  altered[3] = r.dump();
  expect_bad(altered, 4, "altered");
  // Altered and re-hashed: the next record's prev no longer matches.
  altered[3] = Rehash(r);
  expect_bad(altered, 5, "prev is not the hash of line 4");
  // Missing.
  auto missing = good;
  missing.erase(missing.begin() + 2);
  expect_bad(missing, 3, "seq 4 where 3 was due");
  // Reordered.
  auto reordered = good;
  std::swap(reordered[2], reordered[3]);
  expect_bad(reordered, 3, "seq 4 where 3 was due");
  // Inserted: a forged record with its own good hash, chained to the one before.
  auto inserted = good;
  json forged = json::parse(good[2]);
  forged["seq"] = 4;
  forged["kind"] = "versions";
  forged["prev"] = json::parse(good[2])["hash"];
  inserted.insert(inserted.begin() + 3, Rehash(forged));
  expect_bad(inserted, 5, "seq 4 where 5 was due");
  // Cut short: the end is gone.
  auto cut = good;
  cut.pop_back();
  expect_bad(cut, 7, "without a job_end");
  // The start gone (a chain that begins later).
  auto headless = good;
  headless.erase(headless.begin());
  expect_bad(headless, 1, "seq 2 where 1 was due");
  // Not JSON.
  auto garbage = good;
  garbage[1] = "{\"seq\": 2,";
  expect_bad(garbage, 2, "not a JSON object");
  // Another model than the one the end names.
  expect_bad(good, 8, "the job_end record's final model", std::string(64, 'b'));
  EXPECT_TRUE(VerifyAuditLines(good, {std::string(64, 'a')}).ok);
  expect_bad({}, 0, "no records");
}

// The model checked against the job_end, tensor by tensor (acan audit verify --model): the run's
// own model holds; a model with one tensor altered is refused, and that tensor alone is named; a
// model without a tensor names it as missing.
TEST(AuditLogTest, AnAlteredModelIsRefusedNamingTheTensor) {
  const std::vector<float> weight = {0.25f, -1.5f, 3.0f, 0.125f}, bias = {0.5f, -0.75f};
  auto space = NewSpace();
  const Layout layout("job");
  {
    AuditLog log(space.get(), &layout, "m0");
    log.Append("job_start", {{"config_sha256", std::string(64, 'c')}});
    log.AppendVersions(
        "job_end",
        {{"final_model_sha256", std::string(64, 'a')},
         {"tensors", {{"l0.w", "layers.0.weight"}, {"l0.b", "layers.0.bias"}}}},
        {{"l0.w", 3, Value::FromVector(weight)}, {"l0.b", 3, Value::FromVector(bias)}});
    ASSERT_TRUE(log.Flush().ok());
  }
  const auto lines = ReadAuditChain(space.get(), layout).value();
  // What acan audit verify --model passes: the model's hash and each tensor's.
  auto model = [](const std::string& sha,
                  std::vector<std::pair<std::string, std::vector<float>>> tensors) {
    AuditVerifyOptions o;
    o.model_sha256 = sha;
    for (const auto& [name, data] : tensors) o.tensor_sha256[name] = nn::FloatsSha256({data});
    return o;
  };
  AuditVerdict v = VerifyAuditLines(
      lines, model(std::string(64, 'a'), {{"layers.0.weight", weight}, {"layers.0.bias", bias}}));
  EXPECT_TRUE(v.ok) << v.line << ": " << v.problem;

  std::vector<float> altered = weight;
  altered[2] = 3.0001f;
  v = VerifyAuditLines(
      lines, model(std::string(64, 'b'), {{"layers.0.weight", altered}, {"layers.0.bias", bias}}));
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.line, 2);
  EXPECT_NE(v.problem.find("tensor 'layers.0.weight' is not shard 'l0.w''s final version"),
            std::string::npos)
      << v.problem;
  EXPECT_EQ(v.problem.find("layers.0.bias"), std::string::npos) << v.problem;

  v = VerifyAuditLines(lines, model(std::string(64, 'b'), {{"layers.0.weight", weight}}));
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.problem.find("tensor 'layers.0.bias' (shard 'l0.b') is missing"), std::string::npos)
      << v.problem;
  EXPECT_EQ(v.problem.find("layers.0.weight"), std::string::npos) << v.problem;
}

}  // namespace
}  // namespace acan::runtime

namespace acan::runtime {
namespace {

// A secure deployment's manager signs every record: --ca accepts the chain, and refuses one
// re-hashed end to end by someone with the file alone, one signed by another role's key (a
// handler's certificate from the same CA), by a manager certificate of another CA, or unsigned.
class SignedAuditTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/audit_signed_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    ASSERT_TRUE(nats::InitSecureDir({dir_}).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::vector<std::string> SignedChain(const std::string& role) {
    auto signer = AuditSigner::Load(dir_ + "/" + role + "-key.pem", dir_ + "/" + role + ".pem");
    EXPECT_TRUE(signer.ok()) << signer.status().ToString();
    auto space = NewSpace();
    const Layout layout("job");
    {
      AuditLog log(space.get(), &layout, "m0", *signer);
      log.Append("job_start", {{"config_sha256", std::string(64, 'c')}});
      log.AppendVersions("versions", {{"steps", {0, 1}}}, {{"l0.w", 2, Value::FromString("w")}});
      log.Append("job_end", {{"final_model_sha256", std::string(64, 'a')}});
      EXPECT_TRUE(log.Flush().ok());
    }
    return ReadAuditChain(space.get(), layout).value();
  }
  AuditVerdict Verify(const std::vector<std::string>& lines) {
    AuditVerifyOptions o;
    o.ca_file = dir_ + "/ca.pem";
    return VerifyAuditLines(lines, o);
  }
  std::string dir_;
};

TEST_F(SignedAuditTest, OnlyTheDeploymentsManagerSignsAChainThatVerifies) {
  const auto lines = SignedChain("manager");
  AuditVerdict v = Verify(lines);
  EXPECT_TRUE(v.ok) << v.line << ": " << v.problem;
  EXPECT_TRUE(VerifyAuditLines(lines).ok) << "the chain holds without --ca too";
  // Every record re-hashed from the first changed one on, as whoever holds the file can: the
  // chain holds, the signatures do not.
  std::vector<std::string> forged = lines;
  std::string prev(64, '0');
  for (size_t i = 0; i < forged.size(); ++i) {
    json r = json::parse(forged[i]);
    if (i == 1) r["versions"][0]["sha256"] = std::string(64, 'f');
    r["prev"] = prev;
    r.erase("sig");
    r["hash"] = json::parse(Rehash(r))["hash"];
    r["sig"] = json::parse(lines[i])["sig"];
    prev = r["hash"].get<std::string>();
    forged[i] = r.dump();
  }
  EXPECT_TRUE(VerifyAuditLines(forged).ok) << "re-hashed end to end, the chain alone holds";
  v = Verify(forged);
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.line, 2);
  EXPECT_NE(v.problem.find("signature is not its signer's"), std::string::npos) << v.problem;
  // Signed with a handler's key, a certificate of the same CA: refused by its name.
  v = Verify(SignedChain("handler"));
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.line, 1);
  EXPECT_NE(v.problem.find("'acan-handler', not acan-manager"), std::string::npos) << v.problem;
  // A manager certificate that signs itself: not the CA's.
  ASSERT_TRUE(
      nats::IssueClientCertificate(dir_, "acan-manager", 0, 30, true, dir_ + "/stranger").ok());
  v = Verify(SignedChain("stranger"));
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.problem.find("not the CA's"), std::string::npos) << v.problem;
  // No signature at all.
  v = Verify(Chain(2));
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.line, 1);
  EXPECT_NE(v.problem.find("unsigned"), std::string::npos) << v.problem;
}

}  // namespace
}  // namespace acan::runtime
