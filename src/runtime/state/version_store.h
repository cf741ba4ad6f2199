// The version store: the manager's view of every parameter and velocity shard's version in the
// space (<job>.p.<shard>.v<version>; the version is the number of updates applied) and the one
// place that writes a new version. An update of step s applies only to version s and yields s + 1
// (compare-and-set); any other version means a duplicate, which is never written again. With
// window W a task of step t reads a version >= t - W + 1, so older versions are dropped as soon as
// nothing can read them (DESIGN.md section 5). Not thread-safe: one manager owns one.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "acan/space.h"
#include "nn/model.h"
#include "nn/model_stream.h"
#include "nn/plan.h"
#include "runtime/core/layout.h"

namespace acan::runtime {

// A version as the audit log records it: its content, hashed later on the log's thread, or its
// SHA-256 made at once (by a manager that must not hold a step's values until then).
struct WrittenVersion {
  std::string shard;
  int64_t version = 0;
  Value value;         // empty once hashed
  std::string sha256;  // "" until hashed

  // Hashes the content now and lets it go.
  void Hash();
};

class VersionStore {
 public:
  // REQUIRES: `space` and `layout` outlive it; window >= 1.
  VersionStore(Space* space, const Layout* layout, int64_t window)
      : space_(space), layout_(layout), window_(window) {}

  // Finds the newest version of each shard in the space (DataLoss naming a shard that has none),
  // then drops the versions no task can read any more (a predecessor may have stopped before it
  // dropped them): those older than the window below both the slowest shard and `oldest_step`,
  // the oldest step not yet complete, whose tasks may have to run again on the versions they
  // read even when every shard is past it already. `keep` (the lease's) is called before each
  // shard's read: a state of many large tiles takes longer to find than a lease lasts.
  Status Load(const std::vector<std::string>& shards, int64_t oldest_step,
              const std::function<Status()>& keep = nullptr);

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

  // The versions this store wrote since the last call, for the audit log: their contents while
  // they fit the hold limit, their SHA-256 beyond it (a manager with a memory budget).
  std::vector<WrittenVersion> TakeWritten();
  void set_hold_limit(int64_t bytes) { hold_limit_ = bytes; }

 private:
  Space* space_;
  const Layout* layout_;
  int64_t window_;
  std::map<std::string, int64_t> versions_;
  std::vector<WrittenVersion> written_;
  int64_t held_ = 0;  // the bytes of the contents in written_
  int64_t hold_limit_ = INT64_MAX;
};

// The model whose shards are at `version` in the space (DataLoss naming a shard that lacks it).
Result<nn::Model> ReadModel(Space* space, const Layout& layout, const nn::Plan& plan,
                            int64_t version);
// Rows [r0, r1) of one tensor of that model (layer `layer`'s weight, or its bias), row-major,
// read from the shards of the row blocks they touch: what a process that must not hold the model
// reads at a time (nn::BandReader).
Result<std::vector<float>> ReadModelRows(Space* space, const Layout& layout, const nn::Plan& plan,
                                         int64_t version, int layer, bool bias, int64_t r0,
                                         int64_t r1);
// ReadModelRows over `version`, as the nn functions that stream a model take it. REQUIRES: the
// arguments outlive the reader.
nn::BandReader VersionRows(Space* space, const Layout& layout, const nn::Plan& plan,
                           int64_t version);
// Writes version `version` of the model to `path`, byte for byte as nn::SaveModel would, reading
// each shard once (nn::SaveModelBlocks), where a pass of bands over VersionRows reads a tile once
// for every band it crosses: a process that must not hold the model writes it so, then hashes and
// evaluates it from the file by rows (nn::ModelFileRows). `on_shard`, if given, sees each shard's
// key and bytes as they are read (the audit hashes the final versions so), after `keep` (the
// lease's) was called before the read. DataLoss naming a shard that lacks the version.
Status SaveVersion(
    Space* space, const Layout& layout, const nn::Plan& plan, int64_t version,
    const std::string& path, const std::function<Status()>& keep = nullptr,
    const std::function<void(const std::string& key, const Value&)>& on_shard = nullptr);

// The rows of version `version` as a process that must not hold the model reads them: the
// model written to `path` a shard at a time (SaveVersion, each shard read once) and read back from
// the file (nn::ModelFileRows). Where `scratch` is true and no file can be written at `path` (no
// room, no permission), the rows are read in bands from the space instead (VersionRows: each tile
// once per band it crosses), with a warning: a scratch file is for speed, not needed. `keep` and
// `on_shard` as SaveVersion's. REQUIRES: the arguments outlive the reader.
Result<nn::BandReader> SavedVersionRows(
    Space* space, const Layout& layout, const nn::Plan& plan, int64_t version,
    const std::string& path, bool scratch, const std::function<Status()>& keep = nullptr,
    const std::function<void(const std::string& key, const Value&)>& on_shard = nullptr);

// A file of this process's own under the temporary folder ($TMPDIR, or /tmp), named after `what`,
// the process and a count, removed (with the ".tmp" a writer may leave) when it goes: where a
// manager without a model path writes the model it must hash and evaluate by rows.
class ScratchFile {
 public:
  explicit ScratchFile(std::string_view what);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The rows such a pass reads at a time: the plan's tallest row block (a tile's edge; a whole
// tensor's rows when its shards are whole), so that each band reads each shard once; with a
// memory budget (> 0), a band of the widest tensor at most a sixteenth of it (a block then read in
// equal parts, each reading its shards).
int64_t ReadBandRows(const nn::Plan& plan, int64_t memory = 0);

}  // namespace acan::runtime
