// Task messages: what the manager encodes (a spec encoded once at admission, the attempt and the
// resolved input keys at each send) is what a handler decodes; a damaged message is refused.
#include "runtime/core/messages.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "nn/plan.h"
#include "runtime/core/progress.h"

namespace acan::runtime {
namespace {

// An update task of step 3 of the note's toy (JobConfig's defaults), as the plan makes it.
nn::TaskSpec UpdateTask() {
  const JobConfig job;
  const nn::Plan plan = nn::Plan::Create(job, -1, 100).value();
  for (const nn::TaskSpec& t : plan.StepTasks(3, job.train.batch)) {
    if (t.op == nn::TaskOp::kUpdate) return t;
  }
  ADD_FAILURE() << "the plan has no update task";
  return {};
}

TEST(MessagesTest, APreEncodedSpecDecodesToTheTask) {
  const nn::TaskSpec spec = UpdateTask();
  const std::string encoded = nn::EncodeTask(spec);
  std::vector<std::string> keys;  // what Send resolves them to (any keys do here)
  for (const std::string& in : spec.inputs) keys.push_back("job.k." + in);
  for (int32_t attempt : {1, 4}) {  // a resend reuses the encoded spec
    auto m = DecodeTaskMessage(EncodeTaskMessage(attempt, keys, encoded, 1000 * attempt));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(m->attempt, attempt);
    EXPECT_EQ(m->timeout_ns, 1000 * attempt);
    EXPECT_EQ(m->input_keys, keys);
    EXPECT_EQ(nn::EncodeTask(m->spec), encoded);
    EXPECT_EQ(m->spec.key, spec.key);
    EXPECT_EQ(m->spec.inputs, spec.inputs);
  }
}

TEST(MessagesTest, DamagedMessagesAreRefused) {
  const nn::TaskSpec spec = UpdateTask();
  const std::vector<std::string> keys(spec.inputs.size(), "k");
  Value good = EncodeTaskMessage(1, keys, nn::EncodeTask(spec));
  auto bytes = good.As<uint8_t>();
  // Cut short.
  auto cut = DecodeTaskMessage(Value::CopyOf(bytes.data(), bytes.size() - 3));
  EXPECT_FALSE(cut.ok());
  // One input key fewer than the spec reads.
  const std::vector<std::string> fewer(keys.begin(), keys.end() - 1);
  auto short_keys = DecodeTaskMessage(EncodeTaskMessage(1, fewer, nn::EncodeTask(spec)));
  ASSERT_FALSE(short_keys.ok());
  EXPECT_NE(short_keys.status().ToString().find(spec.key), std::string::npos);
  // Not a task message at all.
  EXPECT_FALSE(DecodeTaskMessage(Value::FromString("hello")).ok());
}

TEST(MessagesTest, ADoneReportCarriesWhatWasMissing) {
  DoneMessage done{3, 1, 42, "", {"job.t.fwd.s2.m0", "job.p.w0.v2"}};
  done.speed = 5;
  Value encoded = EncodeDoneMessage(done);
  auto m = DecodeDoneMessage(encoded);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->attempt, 3);
  EXPECT_EQ(m->handler, 1);
  EXPECT_EQ(m->exec_ns, 42);
  EXPECT_EQ(m->missing, done.missing);
  EXPECT_EQ(m->speed, 5);
  auto bytes = encoded.As<uint8_t>();
  EXPECT_FALSE(DecodeDoneMessage(Value::CopyOf(bytes.data(), bytes.size() - 1)).ok());
  // A speed factor that is no slow-down at all (0, negative, not a number) is refused.
  for (double bad : {0.0, -1.0, std::nan("")}) {
    done.speed = bad;
    auto refused = DecodeDoneMessage(EncodeDoneMessage(done));
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().ToString().find("speed factor"), std::string::npos)
        << refused.status().ToString();
  }
}

// A count or a size in a message is checked before room is made for it: a task message claiming
// more inputs than its bytes can hold, and a spec whose widths multiply past the largest tensor,
// are refused with what they claim.
// A handler's alive tuple carries its budget; one written before budgets were (an incarnation
// alone) reads as no budget; anything else is refused.
TEST(MessagesTest, AnAliveTupleCarriesTheHandlersBudget) {
  auto a = DecodeAliveMessage(EncodeAliveMessage({3, int64_t{16} << 20}));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->incarnation, 3);
  EXPECT_EQ(a->memory, int64_t{16} << 20);
  auto old = DecodeAliveMessage(Value::FromVector(std::vector<int64_t>{7}));
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->incarnation, 7);
  EXPECT_EQ(old->memory, 0);
  EXPECT_EQ(DecodeAliveMessage(Value::FromVector(std::vector<int64_t>{1, 2, 3})).status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(DecodeAliveMessage(Value::FromVector(std::vector<int64_t>{1, -5})).status().code(),
            StatusCode::kDataLoss);
  EXPECT_EQ(DecodeAliveMessage(Value::FromString("abc")).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeAliveMessage(Value()).status().code(), StatusCode::kDataLoss);
}

TEST(MessagesTest, ClaimedSizesAreCheckedBeforeAnythingIsAllocated) {
  const nn::TaskSpec spec = UpdateTask();
  Value good = EncodeTaskMessage(1, {"k"}, nn::EncodeTask(spec));
  std::vector<uint8_t> bytes(good.As<uint8_t>().begin(), good.As<uint8_t>().end());
  // magic, attempt, timeout_ns, then the count of input keys.
  const uint32_t claimed = 4000;
  std::memcpy(bytes.data() + 4 + 4 + 8, &claimed, sizeof claimed);
  auto many = DecodeTaskMessage(Value::CopyOf(bytes.data(), bytes.size()));
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("claims 4000 inputs in"), std::string::npos)
      << many.status().ToString();

  nn::TaskSpec wide = spec;
  wide.widths = {int64_t{1} << 20, int64_t{1} << 20};  // a 2^40-float weight
  wide.layer = 0;
  wide.r1 = wide.c1 = 1;
  auto refused = nn::DecodeTask(nn::EncodeTask(wide));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("out-of-range"), std::string::npos);
  nn::TaskSpec rows = spec;
  rows.rows = int64_t{1} << 40;
  EXPECT_FALSE(nn::DecodeTask(nn::EncodeTask(rows)).ok());
  EXPECT_TRUE(nn::DecodeTask(nn::EncodeTask(spec)).ok());
  // An integer field given as a float out of range was cast (undefined behaviour; found by
  // fuzz_messages, fuzz/corpus/messages/regression-float-step): now refused.
  std::string floaty = nn::EncodeTask(spec);
  const size_t at = floaty.find("\"step\":");
  ASSERT_NE(at, std::string::npos);
  floaty.replace(at, floaty.find(',', at) - at, "\"step\":1e300");
  auto f = nn::DecodeTask(floaty);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("an integer is needed"), std::string::npos)
      << f.status().ToString();
  // The manager's state, likewise.
  EXPECT_FALSE(Progress::FromJson(R"({"next_step": 1e300})").ok());
}

}  // namespace
}  // namespace acan::runtime
