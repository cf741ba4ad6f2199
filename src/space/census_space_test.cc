#include "space/census_space.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "acan/testing/space_conformance.h"

namespace acan::testing {
namespace {

// The wrapper is a space like any other: the whole contract holds through it.
struct CensusFactory {
  static Result<std::unique_ptr<Space>> Open(const SpaceOptions& options) {
    ACAN_ASSIGN_OR_RETURN(auto inner, OpenSpace("mem:", options));
    return std::unique_ptr<Space>(std::make_unique<CensusSpace>(std::move(inner), 1));
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(Census, SpaceConformance, CensusFactory);

// Random puts, gets and takes over a few key classes; after each, the census agrees with a count
// made independently from the inner space, and its peaks with the largest counts seen.
TEST(CensusSpaceTest, CountsAgreeWithTheSpaceItself) {
  auto opened = OpenSpace("mem:");
  ASSERT_TRUE(opened.ok());
  Space* inner = opened->get();
  CensusSpace census(std::move(*opened), 1);
  std::mt19937_64 rng(42);
  const std::vector<std::string> classes = {"t", "task", "p"};
  std::map<std::string, ResidentCount> seen_peak;
  for (int i = 0; i < 3000; ++i) {
    const std::string& cls = classes[rng() % classes.size()];
    const std::string key = "job." + cls + ".k" + std::to_string(rng() % 5);
    switch (rng() % 4) {
      case 0:
      case 1:
        ASSERT_TRUE(census.Put(key, Value::FromVector(std::vector<float>(rng() % 9))).ok());
        break;
      case 2:
        (void)census.Take("job." + cls + ".>", 1 + rng() % 3, Deadline::Now());
        break;
      default:
        (void)census.Get(key, Deadline::Now());
    }
    std::map<std::string, ResidentCount> truth;
    auto all = inner->ReadAll(">");
    ASSERT_TRUE(all.ok());
    for (const Tuple& t : *all) {
      ResidentCount& c = truth[std::string(t.key.token(1))];
      c.tuples++;
      c.bytes += int64_t(t.value.size());
    }
    const Census now = census.Snapshot();
    int64_t total_tuples = 0, total_bytes = 0;
    for (const std::string& c : classes) {
      const ResidentCount& got = now.by_class.count(c) ? now.by_class.at(c) : ResidentCount{};
      ASSERT_EQ(got.tuples, truth[c].tuples) << c << " after op " << i;
      ASSERT_EQ(got.bytes, truth[c].bytes) << c << " after op " << i;
      seen_peak[c].tuples = std::max(seen_peak[c].tuples, truth[c].tuples);
      seen_peak[c].bytes = std::max(seen_peak[c].bytes, truth[c].bytes);
      ASSERT_EQ(got.peak_tuples, seen_peak[c].tuples) << c;
      ASSERT_EQ(got.peak_bytes, seen_peak[c].bytes) << c;
      total_tuples += truth[c].tuples;
      total_bytes += truth[c].bytes;
    }
    ASSERT_EQ(now.total.tuples, total_tuples);
    ASSERT_EQ(now.total.bytes, total_bytes);
  }
}

TEST(CensusSpaceTest, AFailedPutIsNotCounted) {
  SpaceOptions o;
  o.max_value_bytes = 8;
  auto opened = OpenSpace("mem:", o);
  ASSERT_TRUE(opened.ok());
  CensusSpace census(std::move(*opened), 1);
  EXPECT_FALSE(census.Put("job.t.a", Value::FromVector(std::vector<float>(4))).ok());
  const Census c = census.Snapshot();
  EXPECT_EQ(c.total.tuples, 0);
  EXPECT_EQ(c.by_class.at("t").peak_tuples, 1);  // counted while it was being put
}

}  // namespace
}  // namespace acan::testing
