// BufferPool: recycles the float buffers of task outputs. A handler asks for its outputs' sizes
// before running a task and wraps each result in a Value that gives its buffer back to the pool
// when the space (or anyone) lets go of the last copy. A recycled buffer is already the right
// size, so a kernel writes into memory that is mapped, warm and not zero-filled first.
// Thread-safe; Values may outlive the pool (their buffers are then simply freed).
#pragma once

#include <cstddef>
#include <memory>
#include <unordered_map>
#include <vector>

#include "acan/value.h"
#include "common/thread_annotations.h"

namespace acan::runtime {

class BufferPool {
 public:
  // Keeps at most `max_bytes` of idle buffers.
  explicit BufferPool(size_t max_bytes);

  // A buffer of exactly n floats with unspecified contents.
  std::vector<float> Get(size_t n);
  // A Value owning `buffer`; the buffer returns to the pool when the Value's last copy goes.
  Value Wrap(std::vector<float> buffer);

  size_t idle_bytes() const;

 private:
  struct State {
    Mutex mu;
    size_t max_bytes;
    size_t bytes GUARDED_BY(mu) = 0;
    std::unordered_map<size_t, std::vector<std::vector<float>>> idle GUARDED_BY(mu);  // by size
  };
  static void Recycle(State& state, std::vector<float>&& buffer);

  std::shared_ptr<State> state_;
};

}  // namespace acan::runtime
