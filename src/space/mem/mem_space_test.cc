#include "space/mem/mem_space.h"

#include <atomic>

#include "acan/testing/space_conformance.h"

namespace acan::testing {
namespace {

struct MemFactory {
  static Result<std::unique_ptr<Space>> Open(const SpaceOptions& options) {
    return OpenSpace("mem:", options);
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(Mem, SpaceConformance, MemFactory);

// The same contract with getters that spin before they block.
struct MemSpinFactory {
  static Result<std::unique_ptr<Space>> Open(SpaceOptions options) {
    options.spin = 1024;
    return OpenSpace("mem:", options);
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(MemSpin, SpaceConformance, MemSpinFactory);

// A named space (mem:?name=NAME), a new name for each space the suite opens.
struct MemNamedFactory {
  static Result<std::unique_ptr<Space>> Open(const SpaceOptions& options) {
    static std::atomic<int> next{0};
    return OpenSpace("mem:?name=conformance" + std::to_string(next++), options);
  }
};
INSTANTIATE_TYPED_TEST_SUITE_P(MemNamed, SpaceConformance, MemNamedFactory);

TEST(MemSpaceTest, ANamedSpaceIsSharedByEveryOpenerOfItsName) {
  auto a = OpenSpace("mem:?name=shared-by-name");
  auto b = OpenSpace("mem:?name=shared-by-name");
  auto other = OpenSpace("mem:?name=another-name");
  ASSERT_TRUE(a.ok() && b.ok() && other.ok());
  ASSERT_TRUE((*a)->Put("k.x", Value::FromString("from a")).ok());
  auto got = (*b)->Get("k.*", Deadline::Now());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->value.AsString(), "from a");
  EXPECT_TRUE((*other)->Read("k.*")->has_value() == false);
  EXPECT_EQ((*b)->uri(), "mem:?name=shared-by-name");
  // Other limits for an open name are refused; once every handle is gone the name is free.
  auto limited = OpenSpace("mem:?name=shared-by-name&max_total_bytes=10");
  EXPECT_EQ(limited.status().code(), StatusCode::kInvalidArgument);
  a->reset();
  b->reset();
  EXPECT_TRUE(OpenSpace("mem:?name=shared-by-name&max_total_bytes=10").ok());
  EXPECT_EQ(OpenSpace("mem:?name=bad..name").status().code(), StatusCode::kInvalidArgument);
}

TEST(MemSpaceTest, ValuesAreSharedNotCopied) {
  auto s = OpenSpace("mem:");
  ASSERT_TRUE(s.ok());
  Value tensor = Value::FromVector(std::vector<float>(1 << 16, 1.5f));
  ASSERT_TRUE((*s)->Put("p.w", tensor).ok());
  auto read = (*s)->Read("p.w");
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_TRUE((*read)->value.SharesBufferWith(tensor));
  auto got = (*s)->Get("p.w", Deadline::Now());
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->value.SharesBufferWith(tensor));
  EXPECT_EQ(got->value.As<float>()[100], 1.5f);
}

TEST(MemSpaceTest, UriParametersSetLimits) {
  auto s = OpenSpace("mem:?max_value_bytes=4&max_total_bytes=10&spin=0");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->Put("a", Value::FromString("12345")).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE((*s)->Put("a", Value::FromString("1234")).ok());
  EXPECT_EQ((*s)->uri(), "mem:?max_value_bytes=4&max_total_bytes=10&spin=0");
}

TEST(MemSpaceTest, BadUrisAreClearErrors) {
  auto unknown = OpenSpace("redis://localhost");
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("unknown space scheme 'redis'"), std::string::npos)
      << unknown.status().message();
  EXPECT_NE(unknown.status().message().find("mem:"), std::string::npos);
  auto typo = OpenSpace("mem:?max_totl_bytes=3");
  EXPECT_NE(typo.status().message().find("unknown parameter 'max_totl_bytes'"), std::string::npos)
      << typo.status().message();
  auto notnum = OpenSpace("mem:?max_total_bytes=lots");
  EXPECT_EQ(notnum.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenSpace("noscheme").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenSpace("mem://host").status().code(), StatusCode::kInvalidArgument);
}

TEST(MemSpaceTest, RegistryRefusesDuplicateScheme) {
  ASSERT_TRUE(OpenSpace("mem:").ok());  // built-ins are registered
  Status s = RegisterSpaceScheme(
      "mem", [](std::string_view, const SpaceOptions&) -> Result<std::unique_ptr<Space>> {
        return Status::Internal("unused");
      });
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
}

TEST(MemSpaceTest, OneTupleWakesOneWaiter) {
  auto s = OpenSpace("mem:");
  ASSERT_TRUE(s.ok());
  Space& space = **s;
  std::atomic<int> got{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&] {
      if (space.Get("w.>", Deadline::After(2s)).ok()) ++got;
    });
  }
  // All four blocked before anything is put (a slow machine may take a while to get there).
  const auto give_up = Clock::now() + 1500ms;
  while (space.Stats().waiting < 4 && Clock::now() < give_up) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(space.Stats().waiting, 4u);
  ASSERT_TRUE(space.Put("w.1", Value::FromString("x")).ok());
  ASSERT_TRUE(space.Put("w.2", Value::FromString("y")).ok());
  for (auto& t : waiters) t.join();
  EXPECT_EQ(got.load(), 2);
  EXPECT_EQ(space.Stats().timeouts, 2u);
  // Two tuples, two wake-ups: the other two waiters slept on until their deadlines (waking them
  // all, as a notify-all would, counts four or more).
  EXPECT_EQ(space.Stats().wakeups, 2u);
  EXPECT_EQ(space.Stats().waiting, 0u);
}

}  // namespace
}  // namespace acan::testing
