// CensusSpace: a space wrapper that counts what is resident, by key class, as it passes through:
// tuples and value bytes now and at their peak, per class (the key's token at `class_token`,
// e.g. "t" in "<job>.t.<tensor>") and in all. The runtime uses it to watch a run's memory (the
// chaos tests assert a bound on the peaks, a stall report prints the current figures).
// Exact as long as every access to the inner space goes through the wrapper. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "acan/space.h"
#include "common/thread_annotations.h"
#include "space/space_wrapper.h"

namespace acan {

struct ResidentCount {
  int64_t tuples = 0;
  int64_t bytes = 0;
  int64_t peak_tuples = 0;
  int64_t peak_bytes = 0;
};

struct Census {
  ResidentCount total;  // its peaks are of the sum, not the sum of the classes' peaks
  std::map<std::string, ResidentCount, std::less<>> by_class;
};

class CensusSpace final : public SpaceWrapper {
 public:
  // Keys with fewer than class_token + 1 tokens count in class "".
  CensusSpace(std::unique_ptr<Space> inner, size_t class_token);

  using Space::Erase;
  using Space::Get;
  using Space::Put;
  using Space::Take;
  Status Put(Key key, Value value, Deadline deadline) override;
  Status PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) override;
  Result<Tuple> Get(const Pattern& p, Deadline d) override;
  Result<std::vector<Tuple>> Take(const Pattern& p, size_t n, Deadline d) override;
  // Through Take, which this view watches (the inner space's own Erase would bypass it).
  Result<size_t> Erase(const Pattern& p) override { return Space::Erase(p); }

  Census Snapshot() const;

 private:
  void Count(const Key& key, size_t bytes, int sign);

  std::unique_ptr<Space> owned_;
  size_t class_token_;
  mutable Mutex mu_;
  Census census_ GUARDED_BY(mu_);
};

}  // namespace acan
