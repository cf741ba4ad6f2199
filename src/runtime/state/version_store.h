// The version store: the manager's view of every parameter and velocity shard's version in the
// space (<job>.p.<shard>.v<version>; the version is the number of updates applied) and the one
// place that writes a new version. An update of step s applies only to version s and yields s + 1
// (compare-and-set); any other version means a duplicate, which is never written again. With
// window W a task of step t reads a version >= t - W + 1, so older versions are dropped as soon as
// nothing can read them (DESIGN.md section 5). Not thread-safe: one manager owns one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "acan/space.h"
#include "nn/model.h"
#include "nn/plan.h"
#include "runtime/core/layout.h"

namespace acan::runtime {

class VersionStore {
 public:
  // REQUIRES: `space` and `layout` outlive it; window >= 1.
  VersionStore(Space* space, const Layout* layout, int64_t window)
      : space_(space), layout_(layout), window_(window) {}

  // Finds the newest version of each shard in the space (DataLoss naming a shard that has none),
  // then drops the versions no task can read any more (a predecessor may have stopped before it
  // dropped them): those older than the window below both the slowest shard and `oldest_step`,
  // the oldest step not yet complete, whose tasks may have to run again on the versions they
  // read even when every shard is past it already.
  Status Load(const std::vector<std::string>& shards, int64_t oldest_step);

  // The current version of a loaded shard. REQUIRES: Load named it.
  int64_t Current(const std::string& shard) const { return versions_.at(shard); }
  // The slowest shard's version (INT64_MAX with no shard).
  int64_t Min() const;
  // Updates applied over every shard: the sum of the versions.
  int64_t Applied() const;
  const std::map<std::string, int64_t>& versions() const { return versions_; }

  enum class Outcome {
    kApplied,    // version step + 1 written from the proposal
    kDuplicate,  // the shard is past `step` already: nothing to do
    kRepeat,     // version step + 1 was in the space already (an update applied twice: counted)
    kGap,        // the shard is behind `step` (an update dispatched too early: counted)
  };
  // Applies the proposal of `step` to `shard` if the shard is at version `step`: reads (does not
  // take) the proposal, calls `before_write` (the lease check) and writes version step + 1; the
  // proposal stays until the step is cleaned up (RemoveStep), so a manager that dies in between
  // leaves it to its successor.
  // NotFound when the proposal is not in the space (its result was lost: run the task again).
  Result<Outcome> Apply(const std::string& shard, int64_t step,
                        const std::function<Status()>& before_write);

  // Once every shard a task of `step` writes is at step + 1, the version step + 1 - W of each of
  // them can go (its buffer back to the pool while still warm).
  void DropStale(const std::string& shard, int64_t step);

  // The versions this store wrote since the last call (shard, version, value), for the audit log.
  std::vector<std::tuple<std::string, int64_t, Value>> TakeWritten() { return std::move(written_); }

 private:
  Space* space_;
  const Layout* layout_;
  int64_t window_;
  std::map<std::string, int64_t> versions_;
  std::vector<std::tuple<std::string, int64_t, Value>> written_;
};

// The model whose shards are at `version` in the space (DataLoss naming a shard that lacks it).
Result<nn::Model> ReadModel(Space* space, const Layout& layout, const nn::Plan& plan,
                            int64_t version);

}  // namespace acan::runtime
