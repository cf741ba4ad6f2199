#include "space/census_space.h"

#include <algorithm>

namespace acan {

CensusSpace::CensusSpace(std::unique_ptr<Space> inner, size_t class_token)
    : SpaceWrapper(inner.get()), owned_(std::move(inner)), class_token_(class_token) {}

void CensusSpace::Count(const Key& key, size_t bytes, int sign) {
  std::string_view cls = key.token_count() > class_token_ ? key.token(class_token_) : "";
  MutexLock lock(mu_);
  auto it = census_.by_class.find(cls);
  if (it == census_.by_class.end())
    it = census_.by_class.emplace(std::string(cls), ResidentCount{}).first;
  for (ResidentCount* c : {&it->second, &census_.total}) {
    c->tuples += sign;
    c->bytes += sign * int64_t(bytes);
    c->peak_tuples = std::max(c->peak_tuples, c->tuples);
    c->peak_bytes = std::max(c->peak_bytes, c->bytes);
  }
}

Status CensusSpace::Put(Key key, Value value, Deadline deadline) {
  // Counted before it lands, so a taker can never make a count go below zero; taken back if the
  // put fails.
  const size_t bytes = value.size();
  Count(key, bytes, +1);
  Status s = SpaceWrapper::Put(key, std::move(value), deadline);
  if (!s.ok()) Count(key, bytes, -1);
  return s;
}

Status CensusSpace::PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) {
  const size_t bytes = value.size();
  Count(key, bytes, +1);
  Status s = SpaceWrapper::PutFenced(key, std::move(value), fence, deadline);
  if (!s.ok()) Count(key, bytes, -1);
  return s;
}

Result<Tuple> CensusSpace::Get(const Pattern& p, Deadline d) {
  auto t = SpaceWrapper::Get(p, d);
  if (t.ok()) Count(t->key, t->value.size(), -1);
  return t;
}

Result<std::vector<Tuple>> CensusSpace::Take(const Pattern& p, size_t n, Deadline d) {
  auto got = SpaceWrapper::Take(p, n, d);
  if (got.ok()) {
    for (const Tuple& t : *got) Count(t.key, t.value.size(), -1);
  }
  return got;
}

Census CensusSpace::Snapshot() const {
  MutexLock lock(mu_);
  return census_;
}

}  // namespace acan
