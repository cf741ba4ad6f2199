// What the NATS backend decodes from the server's messages (space/nats/wire.h), without a server:
// sizes a subject or a chunk list claims are bounded before memory is reserved, and a value is
// reassembled only from exactly its bytes.
#include "space/nats/wire.h"

#include <gtest/gtest.h>

#include <string>

namespace acan::nats::wire {
namespace {

TEST(WireTest, ASubjectNamesItsSizeAndKeyWithinTheLimit) {
  auto t = ParseTupleSubject("12.job.p.0.v3", 100);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->size, 12u);
  EXPECT_EQ(t->key.str(), "job.p.0.v3");
  auto big = ParseTupleSubject("999999999999.job.p", 1 << 20);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("over max_value_bytes 1048576"), std::string::npos)
      << big.status().ToString();
  EXPECT_FALSE(ParseTupleSubject("12x.job", 100).ok());
  EXPECT_FALSE(ParseTupleSubject("-1.job", 100).ok());
  EXPECT_FALSE(ParseTupleSubject("12.", 100).ok());
  EXPECT_FALSE(ParseTupleSubject("99999999999999999999999.job", SIZE_MAX).ok());
  EXPECT_EQ(*ParseSequence("42"), 42u);
  EXPECT_FALSE(ParseSequence("0").ok());
  EXPECT_FALSE(ParseSequence("4 2").ok());
  EXPECT_FALSE(ParseSequence("").ok());
}

TEST(WireTest, AChunkListMustBeAbleToHoldItsValue) {
  auto ok = ParseChunkList("3 77 abc-1", 2500, 1000);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->count, 3u);
  EXPECT_EQ(ok->crc, 77u);
  EXPECT_EQ(ok->id, "abc-1");
  EXPECT_FALSE(ParseChunkList("2 77 abc-1", 2500, 1000).ok());     // too few to hold it
  EXPECT_FALSE(ParseChunkList("2501 77 abc-1", 2500, 1000).ok());  // more chunks than bytes
  EXPECT_FALSE(ParseChunkList("0 77 abc-1", 2500, 1000).ok());
  EXPECT_FALSE(ParseChunkList("3 77 a.b", 2500, 1000).ok());  // the id is one subject token
  EXPECT_FALSE(ParseChunkList("3 77 ", 2500, 1000).ok());
  EXPECT_FALSE(ParseChunkList("3 x abc", 2500, 1000).ok());
  EXPECT_FALSE(ParseChunkList("3 77", 2500, 1000).ok());
}

TEST(WireTest, AValueIsReassembledFromExactlyItsBytes) {
  const std::string value = "hello, chunked world";
  ChunkList list{2, Crc32(value.data(), value.size()), "id"};
  {
    ChunkAssembler a(list, value.size());
    ASSERT_TRUE(a.Add(value.data(), 10).ok());
    ASSERT_TRUE(a.Add(value.data() + 10, value.size() - 10).ok());
    auto v = a.Finish();
    ASSERT_TRUE(v.ok()) << v.status().ToString();
    EXPECT_EQ(v->AsString(), value);
  }
  {
    ChunkAssembler a(list, value.size());
    ASSERT_TRUE(a.Add(value.data(), 10).ok());
    EXPECT_FALSE(a.Finish().ok());  // a chunk missing
  }
  {
    ChunkAssembler a(list, value.size());
    ASSERT_TRUE(a.Add(value.data(), value.size()).ok());
    EXPECT_FALSE(a.Add("x", 1).ok());  // more than the subject said
  }
  {
    std::string other = value;
    other[3] = 'L';
    ChunkAssembler a(list, value.size());
    ASSERT_TRUE(a.Add(other.data(), other.size()).ok());
    EXPECT_FALSE(a.Finish().ok());  // the checksum
  }
}

}  // namespace
}  // namespace acan::nats::wire
