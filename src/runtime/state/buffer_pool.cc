#include "runtime/state/buffer_pool.h"

namespace acan::runtime {

BufferPool::BufferPool(size_t max_bytes) : state_(std::make_shared<State>()) {
  state_->max_bytes = max_bytes;
}

std::vector<float> BufferPool::Get(size_t n) {
  {
    MutexLock lock(state_->mu);
    auto it = state_->idle.find(n);
    if (it != state_->idle.end() && !it->second.empty()) {
      std::vector<float> v = std::move(it->second.back());
      it->second.pop_back();
      state_->bytes -= n * sizeof(float);
      return v;
    }
  }
  return std::vector<float>(n);
}

void BufferPool::Recycle(State& state, std::vector<float>&& buffer) {
  const size_t bytes = buffer.size() * sizeof(float);
  MutexLock lock(state.mu);
  if (bytes == 0 || state.bytes + bytes > state.max_bytes) return;  // let it go
  state.bytes += bytes;
  state.idle[buffer.size()].push_back(std::move(buffer));
}

Value BufferPool::Wrap(std::vector<float> buffer) {
  std::weak_ptr<State> weak = state_;
  std::shared_ptr<std::vector<float>> owned(new std::vector<float>(std::move(buffer)),
                                            [weak](std::vector<float>* v) {
                                              if (auto state = weak.lock())
                                                Recycle(*state, std::move(*v));
                                              delete v;
                                            });
  return Value::Adopt(std::move(owned));
}

size_t BufferPool::idle_bytes() const {
  MutexLock lock(state_->mu);
  return state_->bytes;
}

}  // namespace acan::runtime
