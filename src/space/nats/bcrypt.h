// bcrypt (Provos and Mazières, "A Future-Adaptable Password Scheme", 1999): the password hash that
// nats-server accepts in place of a password in its configuration (a password matching
// ^\$2[abxy]\$\d{2}\$ is compared as a bcrypt hash), so that the secure deployment's server
// configuration (secure.h) holds no password a reader of the file could connect with.
//
// The hashing is libcrypt's (libxcrypt, Debian's libcrypt1: crypt_rn, and crypt_gensalt_rn for a
// salt from the system's randomness), whose bcrypt is Openwall's crypt_blowfish; this file checks a
// setting and a password before handing them over, so that a bad one is an InvalidArgument naming
// what is wrong rather than crypt(3)'s errno. Hashes are in the modular crypt format "$2a$NN$" + 22
// characters of salt + 31 of hash, in bcrypt's own base64 ("./A-Za-z0-9"). For the hexadecimal
// passwords acan makes, $2a$, $2b$ and $2y$ hash alike, and as Go's bcrypt (nats-server's) does;
// they differ only for some passwords with bytes above 0x7f, where crypt_blowfish's $2a$ guards
// against an old bug of other implementations. Checked against published hashes (bcrypt_test.cc).
// Stateless; thread-safe (a crypt_rn work area per call).
#pragma once

#include <string>
#include <string_view>

#include "acan/status.h"

namespace acan::nats {

// The cost of the hashes in a deployment's server configuration: 2^10 rounds, Go's default,
// about 60 ms of the server's time per connection. The passwords are 256 random bits, which no
// cost makes easier or harder to guess; a higher one would only slow every connection.
inline constexpr int kBcryptCost = 10;

// The hash of `password` with a new random salt, in the "$2a$" format with `cost` (4 to 31).
// InvalidArgument for a cost out of range, a password longer than 72 bytes (bcrypt would ignore the
// rest, and Go's refuses it) or one holding a zero byte (crypt(3) would end it there).
Result<std::string> BcryptHash(std::string_view password, int cost = kBcryptCost);

// crypt(3)'s bcrypt: `password` hashed with the version, cost and salt of `setting` ("$2a$",
// "$2b$" or "$2y$", two digits of cost from 04 to 31, "$", 22 characters of salt; what follows
// is ignored, so that a whole hash is its own setting: a password matches a hash when this
// returns the hash). A password longer than 72 bytes counts by its first 72. InvalidArgument
// naming what is wrong with the setting, or for a password holding a zero byte.
Result<std::string> Bcrypt(std::string_view password, std::string_view setting);

}  // namespace acan::nats
