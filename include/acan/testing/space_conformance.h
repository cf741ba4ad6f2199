// The space contract as one typed GoogleTest suite (DESIGN.md section 3), installed with the
// `testing` component (find_package(acan COMPONENTS testing), link acan::testing), so that a
// backend registered with RegisterSpaceScheme outside this repository can prove itself against
// the same contract as the built-in ones. A backend instantiates it with a factory type that has
//   static acan::Result<std::unique_ptr<acan::Space>> Open(const acan::SpaceOptions&);
// returning a new, empty space for each call; GoogleTest's macro wants the suite's plain name, so
// instantiate it inside namespace acan::testing (tests/consumer/conformance.cc does this):
//   namespace acan::testing {
//   struct MyFactory {
//     static Result<std::unique_ptr<Space>> Open(const SpaceOptions& o) {
//       return OpenSpace("my:", o);
//     }
//   };
//   INSTANTIATE_TYPED_TEST_SUITE_P(My, SpaceConformance, MyFactory);
//   }  // namespace acan::testing
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "acan/space.h"

namespace acan::testing {

using namespace std::chrono_literals;

template <typename Factory>
class SpaceConformance : public ::testing::Test {
 protected:
  std::unique_ptr<Space> Open(SpaceOptions options = {}) {
    auto s = Factory::Open(options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  static Value V(std::string_view s) { return Value::FromString(s); }
  static std::string GetStr(Space& s, std::string_view pattern) {
    auto t = s.Get(pattern, Deadline::After(2s));
    return t.ok() ? std::string(t->value.AsString()) : "<" + t.status().ToString() + ">";
  }
};
TYPED_TEST_SUITE_P(SpaceConformance);

struct MatchCase {
  const char* pattern;
  const char* key;
  bool matches;
};
inline constexpr MatchCase kMatchCases[] = {
    {"a", "a", true},
    {"a", "b", false},
    {"a.b", "a.b", true},
    {"a.b", "a", false},
    {"a", "a.b", false},
    {"a.*", "a.b", true},
    {"a.*", "a", false},
    {"a.*", "a.b.c", false},
    {"*.b", "a.b", true},
    {"*.b", "a.c", false},
    {"a.*.c", "a.x.c", true},
    {"a.*.c", "a.x.d", false},
    {"a.>", "a.b", true},
    {"a.>", "a.b.c.d", true},
    {"a.>", "a", false},
    {">", "a", true},
    {">", "a.b.c", true},
    {"*", "a", true},
    {"*", "a.b", false},
    {"*.*", "a.b", true},
    {"a.*.>", "a.b.c", true},
    {"a.*.>", "a.b", false},
    {"task.fwd.>", "task.bwd.1", false},
    {"A-b_9.*", "A-b_9.x", true},
    {"a.b", "a.B", false},
};

TYPED_TEST_P(SpaceConformance, MatchingRules) {
  for (const MatchCase& c : kMatchCases) {
    auto space = this->Open();
    ASSERT_TRUE(space->Put(c.key, this->V("v")).ok());
    auto r = space->Read(c.pattern);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->has_value(), c.matches) << "pattern " << c.pattern << " key " << c.key;
    if (r->has_value()) {
      EXPECT_EQ((*r)->key.str(), c.key);
    }
  }
}

TYPED_TEST_P(SpaceConformance, OldestMatchFirstAndMultiset) {
  auto s = this->Open();
  ASSERT_TRUE(s->Put("t.fwd.1", this->V("1")).ok());
  ASSERT_TRUE(s->Put("t.bwd.1", this->V("2")).ok());
  ASSERT_TRUE(s->Put("t.fwd.1", this->V("3")).ok());  // equal keys coexist
  ASSERT_TRUE(s->Put("t.fwd.0", this->V("4")).ok());
  EXPECT_EQ(this->GetStr(*s, "t.fwd.*"), "1");
  EXPECT_EQ(this->GetStr(*s, "t.>"), "2");
  EXPECT_EQ(this->GetStr(*s, "*.fwd.*"), "3");
  EXPECT_EQ(this->GetStr(*s, "t.*.0"), "4");
  EXPECT_FALSE(s->Read("t.>")->has_value());
}

TYPED_TEST_P(SpaceConformance, ReadDoesNotRemove) {
  auto s = this->Open();
  ASSERT_TRUE(s->Put("p.w.0", this->V("x")).ok());
  for (int i = 0; i < 3; ++i) {
    auto r = s->Read("p.w.0");
    ASSERT_TRUE(r.ok() && r->has_value());
    EXPECT_EQ((*r)->value.AsString(), "x");
  }
  EXPECT_EQ(this->GetStr(*s, "p.w.0"), "x");
}

TYPED_TEST_P(SpaceConformance, BlockedGetWokenByPut) {
  auto s = this->Open();
  std::string got;
  std::thread getter([&] { got = this->GetStr(*s, "r.*"); });
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(s->Put("other.1", this->V("no")).ok());  // does not match: must not wake it up
  ASSERT_TRUE(s->Put("r.7", this->V("yes")).ok());
  getter.join();
  EXPECT_EQ(got, "yes");
  EXPECT_TRUE(s->Read("other.1")->has_value());
}

TYPED_TEST_P(SpaceConformance, DeadlinesTimeOut) {
  auto s = this->Open();
  auto start = Clock::now();
  auto r = s->Get("none", Deadline::After(100ms));
  EXPECT_EQ(r.status().code(), StatusCode::kTimeout);
  EXPECT_GE(Clock::now() - start, 100ms);
  EXPECT_NE(r.status().message().find("none"), std::string::npos) << r.status().message();
  EXPECT_EQ(s->Take("none", 4, Deadline::Now()).status().code(), StatusCode::kTimeout);
  EXPECT_EQ(s->Stats().timeouts, 2u);
}

TYPED_TEST_P(SpaceConformance, CloseCancelsWaitersAndLaterCalls) {
  auto s = this->Open();
  std::atomic<int> cancelled{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      if (s->Get("never", Deadline::Infinite()).status().IsCancelled()) ++cancelled;
    });
  }
  std::this_thread::sleep_for(50ms);
  s->Close();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(cancelled.load(), 3);
  EXPECT_TRUE(s->Put("a", this->V("x")).IsCancelled());
  EXPECT_TRUE(s->Read("a").status().IsCancelled());
  EXPECT_TRUE(s->Get("a", Deadline::Now()).status().IsCancelled());
}

TYPED_TEST_P(SpaceConformance, OversizeValueRejected) {
  SpaceOptions o;
  o.max_value_bytes = 16;
  auto s = this->Open(o);
  Status st = s->Put("big", Value::FromString(std::string(17, 'x')));
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("17 bytes"), std::string::npos) << st.message();
  EXPECT_FALSE(s->Read("big")->has_value());
  EXPECT_TRUE(s->Put("ok", Value::FromString(std::string(16, 'x'))).ok());
}

TYPED_TEST_P(SpaceConformance, BackPressureUntilDeadlineThenRoom) {
  SpaceOptions o;
  o.max_total_bytes = 100;
  auto s = this->Open(o);
  ASSERT_TRUE(s->Put("a", Value::FromString(std::string(60, 'a'))).ok());
  Status full = s->Put("b", Value::FromString(std::string(60, 'b')), Deadline::After(50ms));
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted) << full.ToString();
  EXPECT_FALSE(s->Read("b")->has_value());
  // A blocked put proceeds as soon as a take makes room.
  Status later;
  std::thread putter([&] { later = s->Put("b", Value::FromString(std::string(60, 'b'))); });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(s->Read("b")->has_value());
  EXPECT_EQ(this->GetStr(*s, "a").size(), 60u);
  putter.join();
  EXPECT_TRUE(later.ok()) << later.ToString();
  EXPECT_TRUE(s->Read("b")->has_value());
  EXPECT_EQ(s->Stats().bytes, 60u);
}

TYPED_TEST_P(SpaceConformance, BulkTakeAndReadAll) {
  auto s = this->Open();
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(s->Put("job.t." + std::to_string(i), this->V(std::to_string(i))).ok());
  ASSERT_TRUE(s->Put("job.x", this->V("x")).ok());
  auto all = s->ReadAll("job.t.*");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ((*all)[i].value.AsString(), std::to_string(i));
  EXPECT_EQ(s->ReadAll("job.>", 2)->size(), 2u);
  auto pouch = s->Take("job.t.*", 3, Deadline::Now());
  ASSERT_TRUE(pouch.ok());
  ASSERT_EQ(pouch->size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ((*pouch)[i].key.str(), "job.t." + std::to_string(i));
  auto rest = s->Take("job.>", 10, Deadline::Now());
  ASSERT_EQ(rest->size(), 3u);
  EXPECT_EQ((*rest)[2].key.str(), "job.x");
  EXPECT_EQ(s->Stats().tuples, 0u);
}

// ReadKeys names what ReadAll returns, in the same order and within the same limit, and leaves
// it in place; Contains says whether a key has a tuple.
TYPED_TEST_P(SpaceConformance, ReadKeysNamesWhatReadAllReturns) {
  auto s = this->Open();
  for (const char* k : {"job.t.2", "job.t.0", "job.x", "job.t.1", "job.t.0"}) {
    ASSERT_TRUE(s->Put(k, this->V(k)).ok());
  }
  for (const char* p : {"job.t.*", "job.>", "*.x", "job.t.0", "none.>"}) {
    SCOPED_TRACE(p);
    auto all = s->ReadAll(p);
    auto keys = s->ReadKeys(Pattern::Parse(p).value());
    ASSERT_TRUE(all.ok() && keys.ok());
    ASSERT_EQ(keys->size(), all->size());
    for (size_t i = 0; i < all->size(); ++i) EXPECT_EQ((*keys)[i].str(), (*all)[i].key.str());
  }
  auto two = s->ReadKeys(Pattern::Parse("job.>").value(), 2);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].str(), "job.t.2");
  EXPECT_EQ((*two)[1].str(), "job.t.0");
  EXPECT_EQ(*s->Contains(Key::Parse("job.t.1").value()), true);
  EXPECT_EQ(*s->Contains(Key::Parse("job.t.3").value()), false);
  EXPECT_EQ(s->Stats().tuples, 5u) << "nothing is removed";
}

TYPED_TEST_P(SpaceConformance, BlockedTakeWaitsForFirstMatch) {
  auto s = this->Open();
  Result<std::vector<Tuple>> got = Status::Internal("unset");
  std::thread t([&] { got = s->Take("q.>", 8, Deadline::After(5s)); });
  std::this_thread::sleep_for(30ms);
  ASSERT_TRUE(s->Put("q.1", this->V("1")).ok());
  t.join();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_GE(got->size(), 1u);
}

TYPED_TEST_P(SpaceConformance, BadInputIsRejectedAndNothingStored) {
  auto s = this->Open();
  Status st = s->Put("a..b", this->V("x"));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("byte 2"), std::string::npos) << st.message();
  EXPECT_EQ(s->Put("a.*", this->V("x")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Put("a b", this->V("x")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Read("a.>.b").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Get("", Deadline::Now()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Take("a", 0, Deadline::Now()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s->Stats().tuples, 0u);
  EXPECT_EQ(s->ReadAll(">")->size(), 0u);
}

TYPED_TEST_P(SpaceConformance, StatsCountOperations) {
  auto s = this->Open();
  ASSERT_TRUE(s->Put("a.1", this->V("abc")).ok());
  ASSERT_TRUE(s->Put("a.2", this->V("de")).ok());
  SpaceStats st = s->Stats();
  EXPECT_EQ(st.tuples, 2u);
  EXPECT_EQ(st.bytes, 5u);
  ASSERT_TRUE(s->Read("a.1").ok());
  ASSERT_TRUE(s->Get("a.1", Deadline::Now()).ok());
  st = s->Stats();
  EXPECT_EQ(st.calls[size_t(SpaceOp::kPut)], 2u);
  EXPECT_EQ(st.calls[size_t(SpaceOp::kRead)], 1u);
  EXPECT_EQ(st.calls[size_t(SpaceOp::kGet)], 1u);
  EXPECT_EQ(st.latency[size_t(SpaceOp::kPut)].total, 2u);
  EXPECT_EQ(st.tuples_taken, 1u);
  EXPECT_EQ(st.tuples, 1u);
  EXPECT_EQ(st.bytes, 2u);
}

// Differential: random puts, reads, takes and read-alls against a plain list scanned in insertion
// order (the model of DESIGN.md section 3), with patterns whose wildcards sit anywhere.
TYPED_TEST_P(SpaceConformance, AgreesWithALinearModel) {
  auto s = this->Open();
  std::mt19937 rng(11);
  const char* tokens[] = {"a", "b", "c"};
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  auto random_name = [&](bool pattern) {
    std::string out;
    const size_t depth = 1 + pick(3);
    for (size_t i = 0; i < depth; ++i) {
      const size_t r = pick(10);
      std::string t = !pattern                     ? tokens[pick(3)]
                      : r < 2                      ? "*"
                      : (r == 2 && i + 1 == depth) ? ">"
                                                   : tokens[pick(3)];
      out += (i ? "." : "") + t;
    }
    return out;
  };
  std::vector<std::pair<Key, std::string>> model;  // insertion order
  for (int step = 0, next = 0; step < 600; ++step) {
    const size_t op = pick(10);
    if (op < 5) {
      Key k = Key::Parse(random_name(false)).value();
      const std::string v = std::to_string(next++);
      ASSERT_TRUE(s->Put(k, this->V(v)).ok());
      model.emplace_back(std::move(k), v);
      continue;
    }
    const Pattern p = Pattern::Parse(random_name(true)).value();
    std::vector<std::string> expected;
    for (const auto& [k, v] : model) {
      if (p.Matches(k)) expected.push_back(v);
    }
    if (op < 7) {
      auto r = s->Read(p);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(r->has_value(), !expected.empty()) << p.str();
      if (r->has_value()) {
        EXPECT_EQ((*r)->value.AsString(), expected[0]) << p.str();
      }
    } else if (op < 9) {
      const size_t n = 1 + pick(3);
      auto taken = s->Take(p, n, Deadline::Now());
      if (expected.empty()) {
        ASSERT_TRUE(taken.status().IsTimeout()) << p.str() << ": " << taken.status().ToString();
        continue;
      }
      ASSERT_TRUE(taken.ok()) << taken.status().ToString();
      ASSERT_EQ(taken->size(), std::min(n, expected.size())) << p.str();
      for (size_t i = 0; i < taken->size(); ++i) {
        EXPECT_EQ((*taken)[i].value.AsString(), expected[i]) << p.str();
        model.erase(std::find_if(model.begin(), model.end(),
                                 [&](const auto& kv) { return kv.second == expected[i]; }));
      }
    } else {
      auto all = s->ReadAll(p);
      ASSERT_TRUE(all.ok()) << all.status().ToString();
      ASSERT_EQ(all->size(), expected.size()) << p.str();
      for (size_t i = 0; i < all->size(); ++i) EXPECT_EQ((*all)[i].value.AsString(), expected[i]);
    }
  }
  EXPECT_EQ(s->Stats().tuples, model.size());
}

// Takers whose patterns overlap, with wildcards at the start, the middle and the end, race for
// the same tuples: each tuple is taken exactly once.
TYPED_TEST_P(SpaceConformance, OverlappingTakersTakeEachTupleOnce) {
  auto s = this->Open();
  constexpr int kProducers = 2, kPerProducer = 300, kTotal = kProducers * kPerProducer;
  std::vector<std::atomic<int>> seen(kTotal);
  std::atomic<int> taken{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        const int id = p * kPerProducer + i;
        const std::string key = std::string(id % 2 ? "ts.fwd." : "ts.bwd.") + (id % 3 ? "y" : "z");
        ASSERT_TRUE(s->Put(key, this->V(std::to_string(id))).ok());
      }
    });
  }
  const char* patterns[] = {"ts.*.y", "ts.fwd.>", "*.bwd.*", ">"};
  for (int c = 0; c < 4; ++c) {
    threads.emplace_back([&, c] {
      while (taken.load() < kTotal) {
        auto pouch = s->Take(patterns[c], 1 + c, Deadline::After(20ms));
        if (!pouch.ok()) {
          ASSERT_TRUE(pouch.status().IsTimeout()) << pouch.status().ToString();
          continue;
        }
        for (const Tuple& t : *pouch) {
          seen[std::stoi(std::string(t.value.AsString()))].fetch_add(1);
          taken.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kTotal; ++i) ASSERT_EQ(seen[i].load(), 1) << "tuple " << i;
  EXPECT_EQ(s->Stats().tuples, 0u);
}

TYPED_TEST_P(SpaceConformance, EraseRemovesEveryMatchAndNothingElse) {
  auto s = this->Open();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(s->Put("job.claim.mb.s1.h" + std::to_string(i), this->V("c")).ok());
    ASSERT_TRUE(s->Put("job.claim.mb.s1.h0", this->V("dup")).ok());  // equal keys: all go
  }
  ASSERT_TRUE(s->Put("job.claim.mb.s2.h0", this->V("other step")).ok());
  ASSERT_TRUE(s->Put("job.claim.mb.s1", this->V("shorter key")).ok());
  auto erased = s->Erase(Pattern::Parse("job.claim.mb.s1.*").value());
  ASSERT_TRUE(erased.ok()) << erased.status().ToString();
  EXPECT_EQ(*erased, 6u);
  EXPECT_EQ(s->ReadAll("job.claim.mb.s1.*")->size(), 0u);
  EXPECT_EQ(s->ReadAll("job.>")->size(), 2u);
  // A mid-subject wildcard, and nothing left to match.
  EXPECT_EQ(s->Erase(Pattern::Parse("job.*.mb.s2.h0").value()).value_or(99), 1u);
  EXPECT_EQ(s->Erase(Key::Parse("job.none").value()).value_or(99), 0u);
  EXPECT_EQ(this->GetStr(*s, "job.claim.mb.s1"), "shorter key");
  EXPECT_EQ(s->Stats().tuples, 0u);
  s->Close();
  EXPECT_TRUE(s->Erase(Key::Parse("job.x").value()).status().IsCancelled());
}

TYPED_TEST_P(SpaceConformance, CellsChangeOnlyFromTheirRevision) {
  auto s = this->Open();
  const Key key = Key::Parse("job.m.lease").value();
  auto none = s->ReadCell(key);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->revision, 0u);
  EXPECT_EQ(none->value.size(), 0u);
  auto r1 = s->SwapCell(key, this->V("one"), 0, Deadline::After(5s));
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_GT(*r1, 0u);
  auto again = s->SwapCell(key, this->V("also first"), 0, Deadline::After(5s));
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition) << again.status().ToString();
  auto r2 = s->SwapCell(key, this->V("two"), *r1, Deadline::After(5s));
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_GT(*r2, *r1);
  auto stale = s->SwapCell(key, this->V("stale"), *r1, Deadline::After(5s));
  ASSERT_EQ(stale.status().code(), StatusCode::kFailedPrecondition) << stale.status().ToString();
  EXPECT_NE(stale.status().message().find(std::to_string(*r2)), std::string::npos)
      << "names the revision found: " << stale.status().ToString();
  auto cell = s->ReadCell(key);
  ASSERT_TRUE(cell.ok()) << cell.status().ToString();
  EXPECT_EQ(cell->value.AsString(), "two");
  EXPECT_EQ(cell->revision, *r2);
  // Tuples and cells under one key never meet.
  ASSERT_TRUE(s->Put(key, this->V("a tuple")).ok());
  EXPECT_EQ(this->GetStr(*s, "job.m.lease"), "a tuple");
  ASSERT_TRUE(s->Put("job.x", this->V("x")).ok());
  EXPECT_EQ(s->Erase(Pattern::Parse("job.>").value()).value_or(99), 1u);
  EXPECT_EQ(s->ReadCell(key).value().value.AsString(), "two");
  EXPECT_EQ(s->Stats().tuples, 0u);
  // Too large a value changes nothing.
  std::string big(kMaxCellBytes + 1, 'b');
  auto oversize = s->SwapCell(key, this->V(big), *r2, Deadline::After(5s));
  EXPECT_EQ(oversize.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s->ReadCell(key).value().revision, *r2);
  s->Close();
  EXPECT_TRUE(s->ReadCell(key).status().IsCancelled());
  EXPECT_TRUE(s->SwapCell(key, this->V("late"), *r2, Deadline::After(1s)).status().IsCancelled());
}

// A counter that threads increment by read-then-swap: a swap that won from a revision another
// swap already left would lose an increment, so the count is exact only if exactly one swap
// from each revision succeeds.
TYPED_TEST_P(SpaceConformance, OfConcurrentSwapsFromOneRevisionOneWins) {
  auto s = this->Open();
  const Key key = Key::Parse("job.counter").value();
  constexpr int kThreads = 4, kEach = 25;
  std::atomic<int> wins{0}, refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int done = 0; done < kEach;) {
        auto cell = s->ReadCell(key);
        ASSERT_TRUE(cell.ok()) << cell.status().ToString();
        const int n = cell->revision != 0 ? std::stoi(std::string(cell->value.AsString())) : 0;
        const uint64_t revision = cell->revision;
        auto swapped = s->SwapCell(key, Value::FromString(std::to_string(n + 1)), revision,
                                   Deadline::After(5s));
        if (swapped.ok()) {
          ++done;
          wins.fetch_add(1);
        } else {
          ASSERT_EQ(swapped.status().code(), StatusCode::kFailedPrecondition)
              << swapped.status().ToString();
          refused.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wins.load(), kThreads * kEach);
  EXPECT_EQ(s->ReadCell(key).value().value.AsString(), std::to_string(kThreads * kEach));
  std::printf("[ cells    ] %d swaps won, %d refused\n", wins.load(), refused.load());
}

// "job.p.t<t>.v<i>": the key of thread t's i-th put in the fenced tests.
inline std::string fmt_key(int t, int i) {
  return "job.p.t" + std::to_string(t) + ".v" + std::to_string(i);
}

// The options under which a space keeps fenced puts (SpaceOptions::fenced): the keys the tests
// below put fenced, and the cells that fence them.
inline SpaceOptions FencedOptions() {
  SpaceOptions o;
  for (const char* p : {"job.p.>", "job.m.lease", "job.m.other"}) {
    o.fenced.push_back(Pattern::Parse(p).value());
  }
  return o;
}

// A fenced put lands only while its cell is at its revision; refused, it stores nothing; stored,
// it is a tuple like any other (read, taken, erased, counted, large values too).
TYPED_TEST_P(SpaceConformance, FencedPutsLandOnlyWhileTheirCellIsAtTheirRevision) {
  auto s = this->Open(FencedOptions());
  const Key lease = Key::Parse("job.m.lease").value();
  auto r1 = s->SwapCell(lease, this->V("m0"), 0, Deadline::After(5s));
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  ASSERT_TRUE(s->PutFenced(Key::Parse("job.p.w.v1").value(), this->V("one"), {lease, *r1}).ok());
  ASSERT_TRUE(s->PutFenced(Key::Parse("job.p.w.v2").value(), this->V("two"), {lease, *r1}).ok());
  auto r2 = s->SwapCell(lease, this->V("m1"), *r1, Deadline::After(5s));
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  const Status stale =
      s->PutFenced(Key::Parse("job.p.w.v3").value(), this->V("stale"), {lease, *r1});
  ASSERT_EQ(stale.code(), StatusCode::kFailedPrecondition) << stale.ToString();
  EXPECT_NE(stale.message().find(std::to_string(*r2)), std::string::npos)
      << "names the revision found: " << stale.ToString();
  EXPECT_FALSE(s->Read("job.p.w.v3").value().has_value()) << "a refused put stored nothing";
  ASSERT_TRUE(s->PutFenced(Key::Parse("job.p.w.v3").value(), this->V("three"), {lease, *r2}).ok());
  // A value larger than a message of a network backend, both ways.
  const std::string big(3 << 20, 'x');
  ASSERT_TRUE(s->PutFenced(Key::Parse("job.p.big.v1").value(), this->V(big), {lease, *r2}).ok());
  EXPECT_EQ(s->PutFenced(Key::Parse("job.p.big.v2").value(), this->V(big), {lease, *r1}).code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(s->Put("job.task.a", this->V("plain")).ok());
  EXPECT_EQ(s->Stats().tuples, 5u);
  auto all = s->ReadAll("job.>");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  std::vector<std::string> keys;
  for (const Tuple& t : *all) keys.push_back(t.key.str());
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"job.p.big.v1", "job.p.w.v1", "job.p.w.v2",
                                            "job.p.w.v3", "job.task.a"}));
  auto big_back = s->Read("job.p.big.v1");
  ASSERT_TRUE(big_back.ok() && big_back->has_value());
  EXPECT_EQ((*big_back)->value.AsString(), big);
  EXPECT_EQ(this->GetStr(*s, "job.p.w.v1"), "one");
  auto taken = s->Take(Pattern::Parse("job.p.w.*").value(), 10, Deadline::After(2s));
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  EXPECT_EQ(taken->size(), 2u);
  EXPECT_EQ(s->Erase(Pattern::Parse("job.>").value()).value_or(99), 2u);
  EXPECT_EQ(s->Stats().tuples, 0u);
  EXPECT_EQ(s->ReadCell(lease).value().revision, *r2) << "erasing tuples leaves the cell";
}

// Fenced puts from several threads while one swaps the cell: every put that began after the
// swap returned is refused, every put that returned Ok before the swap began is stored, and what
// is stored is exactly the puts that returned Ok.
TYPED_TEST_P(SpaceConformance, NoFencedPutLandsAfterItsCellWasSwapped) {
  auto s = this->Open(FencedOptions());
  const Key lease = Key::Parse("job.m.lease").value();
  const Key other = Key::Parse("job.m.other").value();
  const uint64_t r1 = s->SwapCell(lease, this->V("m0"), 0, Deadline::After(5s)).value();
  // Each thread puts until it has made kAfter puts that began after the swap returned.
  constexpr int kThreads = 3, kAfter = 5;
  std::atomic<int> started{0};
  std::atomic<bool> swap_began{false}, swap_done{false};
  std::vector<std::vector<std::pair<int, char>>> outcome(kThreads);  // put, 'o'k/'r'efused
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0, later = 0; later < kAfter; ++i) {
        started.fetch_add(1);
        const bool after = swap_done.load();
        later += after;
        const bool before = !swap_began.load();
        const Key key = Key::Parse(fmt_key(t, i)).value();
        Status put =
            s->PutFenced(key, Value::FromString(key.str()), {lease, r1}, Deadline::After(10s));
        const bool ended_before = !swap_began.load();
        ASSERT_TRUE(put.ok() || put.code() == StatusCode::kFailedPrecondition) << put.ToString();
        if (after) {
          EXPECT_FALSE(put.ok()) << key.str() << " began after the swap and landed";
        }
        if (before && ended_before) {
          EXPECT_TRUE(put.ok()) << put.ToString();
        }
        outcome[t].emplace_back(i, put.ok() ? 'o' : 'r');
        // Another cell's swap between puts: the fence of this one has not moved.
        if (i % 7 == 3 && t == 0) {
          auto c = s->ReadCell(other).value();
          (void)s->SwapCell(other, Value::FromString("x"), c.revision, Deadline::After(5s));
        }
      }
    });
  }
  while (started.load() < kThreads * 10) std::this_thread::yield();
  swap_began.store(true);
  ASSERT_TRUE(s->SwapCell(lease, this->V("m1"), r1, Deadline::After(5s)).ok());
  swap_done.store(true);
  for (auto& t : threads) t.join();
  int landed = 0, refused = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (const auto& [i, what] : outcome[t]) {
      auto back = s->Read(fmt_key(t, i));
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_EQ(back->has_value(), what == 'o') << fmt_key(t, i);
      (what == 'o' ? landed : refused)++;
    }
  }
  EXPECT_GT(landed, 0);
  EXPECT_GT(refused, 0);
  std::printf("[ fenced   ] %d fenced puts landed before the swap, %d refused after it\n", landed,
              refused);
}

REGISTER_TYPED_TEST_SUITE_P(SpaceConformance, MatchingRules, OldestMatchFirstAndMultiset,
                            ReadDoesNotRemove, BlockedGetWokenByPut, DeadlinesTimeOut,
                            CloseCancelsWaitersAndLaterCalls, OversizeValueRejected,
                            BackPressureUntilDeadlineThenRoom, BulkTakeAndReadAll,
                            ReadKeysNamesWhatReadAllReturns, BlockedTakeWaitsForFirstMatch,
                            BadInputIsRejectedAndNothingStored, StatsCountOperations,
                            AgreesWithALinearModel, OverlappingTakersTakeEachTupleOnce,
                            EraseRemovesEveryMatchAndNothingElse, CellsChangeOnlyFromTheirRevision,
                            OfConcurrentSwapsFromOneRevisionOneWins,
                            FencedPutsLandOnlyWhileTheirCellIsAtTheirRevision,
                            NoFencedPutLandsAfterItsCellWasSwapped);

}  // namespace acan::testing
