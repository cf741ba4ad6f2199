// SpaceWrapper: a space that forwards every call to another one. Decorators (injected faults, a
// census of what is resident, a process's crashable view) derive from it and override only what
// they change (LevelDB's EnvWrapper). Thread-safe when the inner space is.
#pragma once

#include <memory>
#include <string>

#include "acan/space.h"

namespace acan {

class SpaceWrapper : public Space {
 public:
  // REQUIRES: `inner` outlives the wrapper (derived classes that own it keep it themselves).
  explicit SpaceWrapper(Space* inner) : inner_(inner) {}

  using Space::Erase;
  using Space::Get;
  using Space::Put;
  using Space::Read;
  using Space::ReadAll;
  using Space::ReadKeys;
  using Space::Take;
  Status Put(Key key, Value value, Deadline deadline) override {
    return inner_->Put(std::move(key), std::move(value), deadline);
  }
  Status PutFenced(Key key, Value value, const Fence& fence, Deadline deadline) override {
    return inner_->PutFenced(std::move(key), std::move(value), fence, deadline);
  }
  Result<std::optional<Tuple>> Read(const Pattern& p) override { return inner_->Read(p); }
  Result<Tuple> Get(const Pattern& p, Deadline d) override { return inner_->Get(p, d); }
  Result<std::vector<Tuple>> Take(const Pattern& p, size_t n, Deadline d) override {
    return inner_->Take(p, n, d);
  }
  Result<std::vector<Tuple>> ReadAll(const Pattern& p, size_t limit) override {
    return inner_->ReadAll(p, limit);
  }
  Result<std::vector<Key>> ReadKeys(const Pattern& p, size_t limit) override {
    return inner_->ReadKeys(p, limit);
  }
  Result<size_t> Erase(const Pattern& p) override { return inner_->Erase(p); }
  bool AcknowledgesPuts() const override { return inner_->AcknowledgesPuts(); }
  Result<Cell> ReadCell(const Key& key) override { return inner_->ReadCell(key); }
  Result<uint64_t> SwapCell(const Key& key, Value value, uint64_t expected,
                            Deadline deadline) override {
    return inner_->SwapCell(key, std::move(value), expected, deadline);
  }
  void Close() override { inner_->Close(); }
  SpaceStats Stats() const override { return inner_->Stats(); }
  const std::string& uri() const override { return inner_->uri(); }

 protected:
  Space* inner() const { return inner_; }

 private:
  Space* inner_;
};

}  // namespace acan
