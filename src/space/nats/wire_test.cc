// What the NATS backend decodes from the server's messages (space/nats/wire.h), without a server:
// sizes a subject or a chunk list claims are bounded before memory is reserved, and a value is
// reassembled only from exactly its bytes.
#include "space/nats/wire.h"

#include "acan/space.h"

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

const std::string kDigest(64, 'a');

TEST(WireTest, AChunkListMustBeAbleToHoldItsValue) {
  auto ok = ParseChunkList("3 " + kDigest + " h abc-1", 2500, 1000);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->count, 3u);
  EXPECT_EQ(ok->sha256, kDigest);
  EXPECT_EQ(ok->writer, ChunkWriter::kHandler);
  EXPECT_EQ(ok->id, "abc-1");
  EXPECT_EQ(FormatChunkList(*ok), "3 " + kDigest + " h abc-1");
  auto bad = [](const std::string& header) { return !ParseChunkList(header, 2500, 1000).ok(); };
  EXPECT_TRUE(bad("2 " + kDigest + " m abc-1"));     // too few to hold it
  EXPECT_TRUE(bad("2501 " + kDigest + " m abc-1"));  // more chunks than bytes
  EXPECT_TRUE(bad("0 " + kDigest + " m abc-1"));
  EXPECT_TRUE(bad("3 " + kDigest + " m a.b"));  // the id is one subject token
  EXPECT_TRUE(bad("3 " + kDigest + " m "));
  EXPECT_TRUE(bad("3 " + kDigest + " x abc"));              // no such writer
  EXPECT_TRUE(bad("3 " + kDigest.substr(1) + " m abc"));    // a digest of 63 digits
  EXPECT_TRUE(bad("3 " + std::string(64, 'A') + " m abc"));  // not lowercase hex
  EXPECT_TRUE(bad("x " + kDigest + " m abc"));
  EXPECT_TRUE(bad("3 " + kDigest + " m"));
  EXPECT_TRUE(bad("3 77 abc-1"));  // the old "<count> <crc32> <id>"
}

TEST(WireTest, TimeStampsAreNanosecondsSinceTheEpoch) {
  EXPECT_EQ(*ParseTimeStamp("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseTimeStamp("2026-12-06T05:10:28.428123456Z"), 1796533828428123456);
  EXPECT_EQ(*ParseTimeStamp("2026-12-06T05:10:28.5Z"), 1796533828500000000);
  EXPECT_FALSE(ParseTimeStamp("2026-12-06 05:10:28Z").ok());
  EXPECT_FALSE(ParseTimeStamp("2026-13-06T05:10:28Z").ok());
  EXPECT_FALSE(ParseTimeStamp("").ok());
}

TEST(WireTest, Sha256IsTheStandardDigest) {
  // FIPS 180-2's example.
  EXPECT_EQ(Sha256Hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(WireTest, AValueIsReassembledFromExactlyItsBytes) {
  const std::string value = "hello, chunked world";
  ChunkList list{2, Sha256Hex(value.data(), value.size()), ChunkWriter::kManager, "id"};
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
    auto v = a.Finish();  // a chunk missing: torn, not tampered
    EXPECT_FALSE(v.ok());
    EXPECT_FALSE(acan::IsTampered(v.status())) << v.status().ToString();
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
    auto v = a.Finish();  // the same size, other bytes: not its writer's
    ASSERT_FALSE(v.ok());
    EXPECT_TRUE(acan::IsTampered(v.status())) << v.status().ToString();
  }
}

}  // namespace
}  // namespace acan::nats::wire
