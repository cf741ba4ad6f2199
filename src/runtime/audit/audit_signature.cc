#include "runtime/audit/audit_signature.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <cstdio>
#include <optional>
#include <vector>

namespace acan::runtime {
namespace {

std::string SslError() {
  const unsigned long e = ERR_get_error();
  char buf[256] = "unknown error";
  if (e != 0) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

std::string Base64(const unsigned char* data, size_t n) {
  std::string out(4 * ((n + 2) / 3) + 1, '\0');
  const int len =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(n));
  out.resize(static_cast<size_t>(std::max(len, 0)));
  return out;
}

// The bytes of base64 text; none when it is not base64.
std::optional<std::vector<unsigned char>> Unbase64(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0 || text.size() > (1u << 20)) return std::nullopt;
  std::vector<unsigned char> out(3 * text.size() / 4);
  const int len = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()),
                                  static_cast<int>(text.size()));
  if (len < 0) return std::nullopt;
  size_t pad = 0;
  while (pad < 2 && text[text.size() - 1 - pad] == '=') ++pad;
  out.resize(static_cast<size_t>(len) - pad);
  return out;
}

using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;

}  // namespace

struct AuditSigner::Key {
  EVP_PKEY* pkey = nullptr;
  ~Key() { EVP_PKEY_free(pkey); }
};

AuditSigner::~AuditSigner() = default;

Result<std::shared_ptr<const AuditSigner>> AuditSigner::Load(const std::string& key_file,
                                                             const std::string& cert_file) {
  std::shared_ptr<AuditSigner> s(new AuditSigner());
  s->key_ = std::make_unique<Key>();
  std::FILE* f = std::fopen(key_file.c_str(), "r");
  if (f == nullptr) {
    return Status::InvalidArgument(fmt::format("cannot open the audit signing key '{}'", key_file));
  }
  s->key_->pkey = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  if (s->key_->pkey == nullptr) {
    return Status::InvalidArgument(
        fmt::format("the audit signing key '{}' is not a PEM key: {}", key_file, SslError()));
  }
  f = std::fopen(cert_file.c_str(), "r");
  if (f == nullptr) {
    return Status::InvalidArgument(fmt::format("cannot open the certificate '{}'", cert_file));
  }
  X509Ptr cert(PEM_read_X509(f, nullptr, nullptr, nullptr), X509_free);
  std::fclose(f);
  if (!cert) {
    return Status::InvalidArgument(
        fmt::format("'{}' is not a PEM certificate: {}", cert_file, SslError()));
  }
  if (X509_check_private_key(cert.get(), s->key_->pkey) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument(
        fmt::format("the key '{}' is not the key of '{}'", key_file, cert_file));
  }
  unsigned char* der = nullptr;
  const int n = i2d_X509(cert.get(), &der);
  if (n <= 0) return Status::Internal("cannot encode the certificate: " + SslError());
  s->cert_der_base64_ = Base64(der, static_cast<size_t>(n));
  OPENSSL_free(der);
  return std::shared_ptr<const AuditSigner>(std::move(s));
}

std::string AuditSigner::Sign(std::string_view hash) const {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t len = 0;
  std::vector<unsigned char> sig;
  if (EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key_->pkey) == 1 &&
      EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(hash.data()),
                     hash.size()) == 1) {
    sig.resize(len);
    if (EVP_DigestSign(ctx, sig.data(), &len, reinterpret_cast<const unsigned char*>(hash.data()),
                       hash.size()) != 1) {
      len = 0;
    }
  }
  EVP_MD_CTX_free(ctx);
  ERR_clear_error();
  return Base64(sig.data(), len);
}

Status VerifyAuditSignature(const std::string& ca_file, std::string_view hash,
                            std::string_view signer, std::string_view sig) {
  auto der = Unbase64(signer);
  if (!der) return Status::DataLoss("its signer is not a base64 certificate");
  const unsigned char* p = der->data();
  X509Ptr cert(d2i_X509(nullptr, &p, static_cast<long>(der->size())), X509_free);
  if (!cert) return Status::DataLoss("its signer is not a certificate");
  std::unique_ptr<X509_STORE, decltype(&X509_STORE_free)> store(X509_STORE_new(), X509_STORE_free);
  if (X509_STORE_load_file(store.get(), ca_file.c_str()) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument(fmt::format("'{}' is not a CA certificate file", ca_file));
  }
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      X509_STORE_CTX_free);
  X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr);
  X509_STORE_CTX_set_flags(ctx.get(), X509_V_FLAG_NO_CHECK_TIME);
  if (X509_verify_cert(ctx.get()) != 1) {
    const int err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();
    return Status::PermissionDenied(fmt::format("its signer's certificate is not the CA's: {}",
                                                X509_verify_cert_error_string(err)));
  }
  char cn[256] = "";
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn, sizeof cn);
  if (std::string_view(cn) != kAuditSignerName) {
    return Status::PermissionDenied(fmt::format(
        "its signer is '{}', not {}: only a manager writes the audit log", cn, kAuditSignerName));
  }
  auto raw = Unbase64(sig);
  if (!raw) return Status::DataLoss("it has no signature (base64)");
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  const bool ok =
      EVP_DigestVerifyInit(md, nullptr, EVP_sha256(), nullptr, X509_get0_pubkey(cert.get())) == 1 &&
      EVP_DigestVerify(md, raw->data(), raw->size(),
                       reinterpret_cast<const unsigned char*>(hash.data()), hash.size()) == 1;
  EVP_MD_CTX_free(md);
  ERR_clear_error();
  if (!ok) return Status::PermissionDenied("its signature is not its signer's over its hash");
  return Status::Ok();
}

}  // namespace acan::runtime
