#include "space/mem/tuple_index.h"

#include <algorithm>
#include <functional>

namespace acan::mem {

namespace {

// A binary min-heap of nodes keyed by a node field; each node remembers its position, so a
// node whose key changed is re-placed in O(log n) without a search.
template <class N, uint64_t N::*kKey, int32_t N::*kPos>
class IntrusiveHeap {
 public:
  N* top() const { return v_.empty() ? nullptr : v_[0]; }
  const std::vector<N*>& items() const { return v_; }
  void Push(N* n) {
    v_.push_back(n);
    Place(v_.size() - 1, n);
    SiftUp(v_.size() - 1);
  }
  void Remove(N* n) {
    size_t i = static_cast<size_t>(n->*kPos);
    N* last = v_.back();
    v_.pop_back();
    n->*kPos = -1;
    if (last != n) {
      Place(i, last);
      Fix(i);
    }
  }
  // Call after the node's key changed.
  void Update(N* n) { Fix(static_cast<size_t>(n->*kPos)); }

 private:
  uint64_t KeyAt(size_t i) const { return v_[i]->*kKey; }
  void Place(size_t i, N* n) {
    v_[i] = n;
    n->*kPos = static_cast<int32_t>(i);
  }
  void Fix(size_t i) {
    if (!SiftUp(i)) SiftDown(i);
  }
  bool SiftUp(size_t i) {
    bool moved = false;
    N* n = v_[i];
    while (i > 0) {
      size_t parent = (i - 1) / 2;
      if (KeyAt(parent) <= n->*kKey) break;
      Place(i, v_[parent]);
      i = parent;
      moved = true;
    }
    Place(i, n);
    return moved;
  }
  void SiftDown(size_t i) {
    N* n = v_[i];
    size_t size = v_.size();
    for (;;) {
      size_t child = 2 * i + 1;
      if (child >= size) break;
      if (child + 1 < size && KeyAt(child + 1) < KeyAt(child)) ++child;
      if (n->*kKey <= KeyAt(child)) break;
      Place(i, v_[child]);
      i = child;
    }
    Place(i, n);
  }

  std::vector<N*> v_;
};

struct TokenHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

}  // namespace

struct TupleIndex::Entry {
  uint64_t seq;
  Tuple tuple;
  Entry* next = nullptr;
};

struct TupleIndex::Node {
  Node* parent = nullptr;
  Entry* head = nullptr;  // tuples whose key ends here, oldest first
  Entry* tail = nullptr;
  uint64_t own_min = kNone;      // seq of head
  uint64_t subtree_min = kNone;  // oldest seq in this subtree, own tuples included
  int32_t pos_own = -1;          // position in parent's `own` heap, -1 when absent
  int32_t pos_sub = -1;          // position in parent's `sub` heap, -1 when absent
  std::unique_ptr<Children> children;

  ~Node() {
    for (Entry* e = head; e != nullptr;) {
      Entry* next = e->next;
      delete e;
      e = next;
    }
  }
};

struct TupleIndex::Children {
  std::unordered_map<std::string, std::unique_ptr<Node>, TokenHash, std::equal_to<>> map;
  // Children with own tuples, by their oldest own tuple; children with any tuple, by subtree.
  IntrusiveHeap<Node, &Node::own_min, &Node::pos_own> own;
  IntrusiveHeap<Node, &Node::subtree_min, &Node::pos_sub> sub;
};

TupleIndex::TupleIndex() : root_(std::make_unique<Node>()) {}
TupleIndex::~TupleIndex() {
  while (free_entries_) {
    Entry* next = free_entries_->next;
    delete free_entries_;
    free_entries_ = next;
  }
}

TupleIndex::Node* TupleIndex::NodeFor(const Key& key) {
  Node* n = root_.get();
  for (size_t i = 0; i < key.token_count(); ++i) {
    if (!n->children) n->children = std::make_unique<Children>();
    auto& map = n->children->map;
    std::string_view tok = key.token(i);
    auto it = map.find(tok);
    if (it == map.end()) {
      auto child = std::make_unique<Node>();
      child->parent = n;
      it = map.emplace(std::string(tok), std::move(child)).first;
      ++node_count_;
    }
    n = it->second.get();
  }
  return n;
}

void TupleIndex::Insert(Tuple tuple) {
  if (node_count_ >= 2 * nodes_after_sweep_ + 1024) SweepEmptyNodes();
  Node* leaf = NodeFor(tuple.key);
  Entry* e = free_entries_;
  if (e) {
    free_entries_ = e->next;
    --free_count_;
    e->seq = next_seq_++;
    e->tuple = std::move(tuple);
    e->next = nullptr;
  } else {
    e = new Entry{next_seq_++, std::move(tuple)};
  }
  if (leaf->tail) {
    leaf->tail->next = e;
  } else {
    leaf->head = e;
  }
  leaf->tail = e;
  ++size_;
  if (leaf->own_min == kNone) {
    leaf->own_min = e->seq;
    leaf->parent->children->own.Push(leaf);
  }
  // The new sequence number is the largest yet: it changes only subtrees that were empty.
  for (Node* n = leaf; n->subtree_min == kNone; n = n->parent) {
    n->subtree_min = e->seq;
    if (!n->parent) break;
    n->parent->children->sub.Push(n);
  }
}

TupleIndex::Best TupleIndex::FindBest(Node* node, const Pattern& p, size_t i) const {
  if (node->subtree_min == kNone) return {};
  if (i == p.token_count()) return node->own_min == kNone ? Best{} : Best{node->own_min, node};
  if (!node->children) return {};
  std::string_view tok = p.token(i);
  if (tok == ">") {
    Node* c = node->children->sub.top();
    if (!c) return {};
    while (c->own_min != c->subtree_min) c = c->children->sub.top();
    return {c->own_min, c};
  }
  if (tok == "*") {
    if (i + 1 == p.token_count()) {
      Node* c = node->children->own.top();
      return c ? Best{c->own_min, c} : Best{};
    }
    Best best;
    for (Node* c : node->children->sub.items()) {
      if (c->subtree_min >= best.seq) continue;  // nothing in there can be older
      Best b = FindBest(c, p, i + 1);
      if (b.seq < best.seq) best = b;
    }
    return best;
  }
  auto it = node->children->map.find(tok);
  return it == node->children->map.end() ? Best{} : FindBest(it->second.get(), p, i + 1);
}

const Tuple* TupleIndex::FindOldest(const Pattern& pattern) const {
  Best b = FindBest(root_.get(), pattern, 0);
  return b.node ? &b.node->head->tuple : nullptr;
}

Tuple TupleIndex::PopHead(Node* leaf) {
  Entry* e = leaf->head;
  leaf->head = e->next;
  if (!leaf->head) leaf->tail = nullptr;
  Tuple t = std::move(e->tuple);
  if (free_count_ < 4096) {
    e->tuple.value = Value();
    e->next = free_entries_;
    free_entries_ = e;
    ++free_count_;
  } else {
    delete e;
  }
  --size_;
  UpdateAfterPop(leaf);
  return t;
}

void TupleIndex::UpdateAfterPop(Node* leaf) {
  leaf->own_min = leaf->head ? leaf->head->seq : kNone;
  auto& own = leaf->parent->children->own;
  if (leaf->own_min == kNone) {
    own.Remove(leaf);
  } else {
    own.Update(leaf);
  }
  for (Node* n = leaf; n != nullptr; n = n->parent) {
    uint64_t m = n->own_min;
    if (n->children) {
      if (Node* c = n->children->sub.top()) m = std::min(m, c->subtree_min);
    }
    if (m == n->subtree_min) break;
    n->subtree_min = m;
    if (!n->parent) break;
    auto& sub = n->parent->children->sub;
    if (m == kNone) {
      sub.Remove(n);
    } else {
      sub.Update(n);
    }
  }
}

size_t TupleIndex::TakeOldest(const Pattern& pattern, size_t max_count, std::vector<Tuple>* out) {
  size_t n = 0;
  for (; n < max_count; ++n) {
    Best b = FindBest(root_.get(), pattern, 0);
    if (!b.node) break;
    out->push_back(PopHead(b.node));
  }
  return n;
}

std::optional<Tuple> TupleIndex::TakeOne(const Pattern& pattern) {
  Best b = FindBest(root_.get(), pattern, 0);
  if (!b.node) return std::nullopt;
  return PopHead(b.node);
}

void TupleIndex::CollectMatches(Node* node, const Pattern& p, size_t i,
                                std::vector<const Entry*>* out) const {
  if (node->subtree_min == kNone) return;
  bool rest = i < p.token_count() && p.token(i) == ">";
  if (i == p.token_count()) {
    for (const Entry* e = node->head; e; e = e->next) out->push_back(e);
    return;
  }
  if (!node->children) return;
  std::string_view tok = p.token(i);
  if (rest || tok == "*") {
    for (Node* c : node->children->sub.items()) {
      if (rest) {
        CollectMatches(c, p, i + 1, out);  // the child's own tuples match '>'
        CollectMatches(c, p, i, out);      // and so does everything deeper
      } else {
        CollectMatches(c, p, i + 1, out);
      }
    }
    return;
  }
  auto it = node->children->map.find(tok);
  if (it != node->children->map.end()) CollectMatches(it->second.get(), p, i + 1, out);
}

std::vector<Tuple> TupleIndex::ReadAll(const Pattern& pattern, size_t limit) const {
  std::vector<const Entry*> found;
  CollectMatches(root_.get(), pattern, 0, &found);
  std::sort(found.begin(), found.end(),
            [](const Entry* a, const Entry* b) { return a->seq < b->seq; });
  if (found.size() > limit) found.resize(limit);
  std::vector<Tuple> out;
  out.reserve(found.size());
  for (const Entry* e : found) out.push_back(e->tuple);
  return out;
}

namespace {
template <class N>
size_t CountNodes(const N& n) {
  size_t count = 1;
  if (n.children) {
    for (auto& [tok, c] : n.children->map) count += CountNodes(*c);
  }
  return count;
}
}  // namespace

void TupleIndex::SweepEmptyNodes() {
  std::function<void(Node*)> sweep = [&](Node* n) {
    if (!n->children) return;
    auto& map = n->children->map;
    for (auto it = map.begin(); it != map.end();) {
      if (it->second->subtree_min == kNone) {
        node_count_ -= CountNodes(*it->second);
        it = map.erase(it);
      } else {
        sweep(it->second.get());
        ++it;
      }
    }
  };
  sweep(root_.get());
  nodes_after_sweep_ = node_count_;
}

}  // namespace acan::mem
