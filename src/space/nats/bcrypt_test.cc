// bcrypt (bcrypt.h, libcrypt's) against published hashes: the test vectors of Openwall's
// crypt_blowfish (wrapper.c), Go's x/crypto/bcrypt (nats-server's implementation) and jBCrypt.
// Whether nats-server accepts the hashes acan writes is secure_test.cc's
// (TheServerConfigurationHoldsBcryptHashesThatTheServerChecks).
#include "space/nats/bcrypt.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace acan::nats {
namespace {

TEST(BcryptTest, KnownAnswers) {
  struct Case {
    std::string password;
    std::string hash;
  } cases[] = {
      // Openwall crypt_blowfish 1.3, wrapper.c.
      {"U*U", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"},
      {"U*U*", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.VGOzA784oUp/Z0DY336zx7pLYAy0lwK"},
      {"U*U*U", "$2a$05$XXXXXXXXXXXXXXXXXXXXXOAcXxm9kjPGEMsLznoKqmqw7tc8WCx4a"},
      {"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789chars after 72 are "
       "ignored",
       "$2a$05$abcdefghijklmnopqrstuu5s2v8.iXieOjg/.AySBTTZIIVFJeBui"},
      {"", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.7uG0VCzI2bS7j6ymqJi9CdcdxiRTWNy"},
      {"\xff\xff\xa3", "$2y$05$/OK.fbVrR/bpIqNJ5ianF.CE5elHaaO4EbggVDjb8P19RukzXSM3e"},
      {"\xff\xff\xa3", "$2b$05$/OK.fbVrR/bpIqNJ5ianF.CE5elHaaO4EbggVDjb8P19RukzXSM3e"},
      {"\xa3", "$2y$05$/OK.fbVrR/bpIqNJ5ianF.Sa7shbm4.OzKpvFnX1pQLmQW96oUlCq"},
      {"\xa3", "$2a$05$/OK.fbVrR/bpIqNJ5ianF.Sa7shbm4.OzKpvFnX1pQLmQW96oUlCq"},
      // Go's x/crypto/bcrypt, TestBcryptingIsCorrect (cost 10, acan's).
      {"allmine", "$2a$10$XajjQvNhvvRt5GSeFk1xFeyqRrsxkhBkUiQeg0dt.wU1qD4aFDcga"},
      // jBCrypt's test vectors.
      {"", "$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s."},
      {"abc", "$2a$10$WvvTPHKwdBJ3uk0Z37EMR.hLA2W6N9AEBhEgrAOljy2Ae5MtaSIUi"},
  };
  for (const Case& c : cases) {
    // The whole hash is its own setting: the salt and cost are read, the rest ignored.
    auto from_hash = Bcrypt(c.password, c.hash);
    ASSERT_TRUE(from_hash.ok()) << c.hash << ": " << from_hash.status().ToString();
    EXPECT_EQ(*from_hash, c.hash);
    auto from_setting = Bcrypt(c.password, c.hash.substr(0, 29));
    ASSERT_TRUE(from_setting.ok()) << from_setting.status().ToString();
    EXPECT_EQ(*from_setting, c.hash);
  }
}

TEST(BcryptTest, OnlyTheFirst72BytesCount) {
  const std::string setting = "$2b$04$abcdefghijklmnopqrstuu";
  const std::string p72(72, 'p');
  EXPECT_EQ(Bcrypt(p72, setting).value(), Bcrypt(p72 + "more", setting).value());
  EXPECT_NE(Bcrypt(p72.substr(0, 71), setting).value(), Bcrypt(p72, setting).value());
  // A new hash refuses what bcrypt would ignore (as Go's does).
  auto too_long = BcryptHash(p72 + "x", 4);
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.status().message().find("at most 72 bytes"), std::string::npos);
  EXPECT_TRUE(BcryptHash(p72, 4).ok());
}

TEST(BcryptTest, AZeroByteIsRefusedNotCutShort) {
  // crypt(3) reads a password up to its first zero byte: "a\0b" would hash as "a".
  const std::string with_zero("a\0b", 3);
  for (const auto& r :
       {BcryptHash(with_zero, 4), Bcrypt(with_zero, "$2b$04$abcdefghijklmnopqrstuu")}) {
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("zero byte"), std::string::npos) << r.status().message();
  }
}

TEST(BcryptTest, ANewHashHasAFreshSaltAndMatchesItsPassword) {
  std::set<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    auto hash = BcryptHash("0123abcd", 4);
    ASSERT_TRUE(hash.ok()) << hash.status().ToString();
    EXPECT_EQ(hash->size(), 60u) << *hash;
    EXPECT_TRUE(hash->starts_with("$2a$04$")) << *hash;
    EXPECT_EQ(Bcrypt("0123abcd", *hash).value(), *hash);
    EXPECT_NE(Bcrypt("0123abcE", *hash).value(), *hash);
    seen.insert(*hash);
  }
  EXPECT_EQ(seen.size(), 3u);
  // The cost of a deployment's configuration.
  auto hash = BcryptHash("0123abcd");
  ASSERT_TRUE(hash.ok());
  EXPECT_TRUE(hash->starts_with("$2a$10$")) << *hash;
  EXPECT_GE(kBcryptCost, 10);
}

TEST(BcryptTest, BadSettingsAndCostsAreClearErrors) {
  struct Case {
    std::string setting;
    std::string says;
  } cases[] = {
      {"", "expected $2a$, $2b$ or $2y$"},
      {"$1$saltsalt", "expected $2a$, $2b$ or $2y$"},
      {"$2x$05$abcdefghijklmnopqrstuu", "expected $2a$, $2b$ or $2y$"},
      {"$2a$5$abcdefghijklmnopqrstuu", "the cost '5$' must be two digits from 04 to 31"},
      {"$2a$03$abcdefghijklmnopqrstuu", "the cost '03' must be two digits from 04 to 31"},
      {"$2a$32$abcdefghijklmnopqrstuu", "the cost '32'"},
      {"$2a$1x$abcdefghijklmnopqrstuu", "the cost '1x'"},
      {"$2a$05$abcdefghij", "the salt 'abcdefghij' must be 22 characters of ./A-Za-z0-9"},
      {"$2a$05$abcdefghijklmnopqrst+u", "the salt 'abcdefghijklmnopqrst+u'"},
  };
  for (const Case& c : cases) {
    auto r = Bcrypt("pw", c.setting);
    ASSERT_FALSE(r.ok()) << c.setting;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.setting;
    EXPECT_NE(r.status().message().find(c.says), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("'" + c.setting + "'"), std::string::npos)
        << r.status().message();
  }
  for (int cost : {3, 32, -1}) {
    auto r = BcryptHash("pw", cost);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << cost;
    EXPECT_NE(r.status().message().find("out of range"), std::string::npos);
  }
}

}  // namespace
}  // namespace acan::nats
