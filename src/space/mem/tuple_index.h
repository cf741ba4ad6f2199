// TupleIndex: the in-process store behind the mem: space, indexed by key tokens.
//
// A trie over key tokens. Each node holds the FIFO of tuples whose key ends there, and two
// intrusive min-heaps over its children: by the sequence number of the child's own oldest tuple
// (answers a trailing '*') and by the oldest sequence number anywhere in the child's subtree
// (answers '>'). So the oldest match of a literal pattern, of a literal prefix ending in '*' or
// '>', costs O(depth * log fanout), whatever else is stored; only a '*' followed by more tokens
// visits each non-empty child at that level. Empty nodes are swept lazily (amortized O(1)).
// Not thread-safe: MemSpace holds its mutex around every call.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "acan/key.h"
#include "acan/space.h"

namespace acan::mem {

class TupleIndex {
 public:
  TupleIndex();
  ~TupleIndex();
  TupleIndex(const TupleIndex&) = delete;
  TupleIndex& operator=(const TupleIndex&) = delete;

  void Insert(Tuple tuple);
  // The oldest match, or nullptr; the pointer is valid until the next mutation.
  const Tuple* FindOldest(const Pattern& pattern) const;
  // Removes and returns up to `max_count` matches, oldest first, appended to `out`.
  size_t TakeOldest(const Pattern& pattern, size_t max_count, std::vector<Tuple>* out);
  // Removes and returns the oldest match, if any.
  std::optional<Tuple> TakeOne(const Pattern& pattern);
  // Up to `limit` matches, oldest first, left in place.
  std::vector<Tuple> ReadAll(const Pattern& pattern, size_t limit) const;

  size_t size() const { return size_; }
  size_t node_count() const { return node_count_; }

 private:
  struct Node;
  struct Entry;
  struct Children;
  static constexpr uint64_t kNone = UINT64_MAX;

  // The node and sequence number of the oldest match under `node` for pattern tokens [i..].
  struct Best {
    uint64_t seq = kNone;
    Node* node = nullptr;
  };
  Best FindBest(Node* node, const Pattern& p, size_t i) const;
  void CollectMatches(Node* node, const Pattern& p, size_t i, std::vector<const Entry*>* out) const;
  Node* NodeFor(const Key& key);
  Tuple PopHead(Node* leaf);
  void UpdateAfterPop(Node* leaf);
  void SweepEmptyNodes();

  std::unique_ptr<Node> root_;
  uint64_t next_seq_ = 0;
  size_t size_ = 0;
  size_t node_count_ = 1;
  Entry* free_entries_ = nullptr;  // recycled entries: no malloc inside the space's lock
  size_t free_count_ = 0;
  size_t nodes_after_sweep_ = 1;
};

}  // namespace acan::mem
