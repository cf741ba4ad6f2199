// Signatures on audit records (runtime/audit/audit.h): in a secure deployment every record is
// signed with the manager's certificate key, and carries that certificate, so that `acan audit
// verify
// --ca` can tell a chain its managers wrote from one re-hashed end to end by whoever holds the
// file: only a certificate of the deployment's CA whose common name is acan-manager counts.
// A record's "sig" is an ECDSA (or RSA) signature, SHA-256, over its "hash" (the hex digits);
// "signer" is the certificate, DER in base64; the hash covers "signer" and not "sig". Immutable
// after Load; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "acan/status.h"

namespace acan::runtime {

class AuditSigner {
 public:
  // The key and certificate in PEM files (a deployment's manager-key.pem and manager.pem);
  // InvalidArgument naming a file that is not one, or a key that is not the certificate's.
  static Result<std::shared_ptr<const AuditSigner>> Load(const std::string& key_file,
                                                         const std::string& cert_file);
  ~AuditSigner();
  // The signature of `hash` (base64).
  std::string Sign(std::string_view hash) const;
  // The certificate, DER in base64.
  const std::string& certificate() const { return cert_der_base64_; }

 private:
  AuditSigner() = default;
  struct Key;
  std::unique_ptr<Key> key_;
  std::string cert_der_base64_;
};

// The common name a record's signer must have.
inline constexpr std::string_view kAuditSignerName = "acan-manager";

// Checks that `signer` (base64 DER) is a certificate the CA in `ca_file` issued to acan-manager
// (whatever its validity period now: a log outlives its certificates) and that `sig` is its
// signature of `hash`. Ok, or the reason it is not.
Status VerifyAuditSignature(const std::string& ca_file, std::string_view hash,
                            std::string_view signer, std::string_view sig);

}  // namespace acan::runtime
