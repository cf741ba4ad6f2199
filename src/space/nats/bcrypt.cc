#include "space/nats/bcrypt.h"

#include <crypt.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace acan::nats {
namespace {

constexpr std::string_view kAlphabet =
    "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
constexpr size_t kSaltChars = 22;     // 16 bytes in bcrypt's base64
constexpr size_t kSettingChars = 29;  // "$2a$NN$" and the salt
constexpr size_t kMaxKeyBytes = 72;
constexpr int kMinCost = 4, kMaxCost = 31;

Status CheckPassword(std::string_view password) {
  if (password.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument(
        "a password for bcrypt cannot hold a zero byte (crypt(3) would end it there)");
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> Bcrypt(std::string_view password, std::string_view setting) {
  auto bad = [&](std::string_view what) {
    return Status::InvalidArgument(fmt::format("bcrypt setting '{}': {}", setting, what));
  };
  if (setting.size() < 7 || !setting.starts_with("$2") || setting[3] != '$' ||
      (setting[2] != 'a' && setting[2] != 'b' && setting[2] != 'y')) {
    return bad("expected $2a$, $2b$ or $2y$, then the cost and the salt");
  }
  const std::string_view cost_text = setting.substr(4, 2);
  auto digit = [](char c) { return c >= '0' && c <= '9' ? c - '0' : -100; };
  const int cost = digit(setting[4]) * 10 + digit(setting[5]);
  if (cost < kMinCost || cost > kMaxCost || setting[6] != '$') {
    return bad(fmt::format("the cost '{}' must be two digits from 04 to 31, then '$'", cost_text));
  }
  const std::string_view salt_text = setting.substr(7, kSaltChars);
  if (salt_text.size() != kSaltChars ||
      salt_text.find_first_not_of(kAlphabet) != std::string_view::npos) {
    return bad(
        fmt::format("the salt '{}' must be {} characters of ./A-Za-z0-9", salt_text, kSaltChars));
  }
  ACAN_RETURN_IF_ERROR(CheckPassword(password));
  // bcrypt keys on at most 72 bytes; crypt(3) refuses a phrase past 512, which this one then is
  // not.
  const std::string phrase(password.substr(0, kMaxKeyBytes));
  const std::string prefix(setting.substr(0, kSettingChars));
  // About 32 KiB: on the heap, zeroed as crypt_rn asks of a new work area.
  auto data = std::make_unique<crypt_data>();
  errno = 0;
  const char* hash = crypt_rn(phrase.c_str(), prefix.c_str(), data.get(), sizeof(crypt_data));
  if (hash == nullptr || hash[0] == '*') {
    return Status::Internal(fmt::format("libcrypt's bcrypt refused the setting '{}': {}", prefix,
                                        errno != 0 ? std::strerror(errno) : "no reason given"));
  }
  return std::string(hash);
}

Result<std::string> BcryptHash(std::string_view password, int cost) {
  if (cost < kMinCost || cost > kMaxCost) {
    return Status::InvalidArgument(
        fmt::format("bcrypt cost {} is out of range: {} to {}", cost, kMinCost, kMaxCost));
  }
  if (password.size() > kMaxKeyBytes) {
    return Status::InvalidArgument(fmt::format(
        "a password for bcrypt is at most {} bytes (bcrypt ignores the rest); this one has {}",
        kMaxKeyBytes, password.size()));
  }
  ACAN_RETURN_IF_ERROR(CheckPassword(password));
  // A random source of null: libcrypt reads 16 bytes of salt from the system (getrandom).
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  errno = 0;
  if (crypt_gensalt_rn("$2a$", static_cast<unsigned long>(cost), nullptr, 0, setting,
                       sizeof(setting)) == nullptr) {
    return Status::Internal(
        fmt::format("no bcrypt salt from libcrypt (crypt_gensalt_rn: {})", std::strerror(errno)));
  }
  return Bcrypt(password, setting);
}

}  // namespace acan::nats
