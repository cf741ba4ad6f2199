// Value: the immutable bytes of a tuple. Copies share one buffer (reference counted), so a
// tensor put into the in-process space is never copied on put or read. A Value never changes
// after construction; copies may be used from any thread.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace acan {

class Value {
 public:
  Value() = default;

  // A new buffer holding a copy of `bytes`.
  static Value CopyOf(const void* data, size_t size) {
    auto buf = std::make_shared<std::vector<std::byte>>(size);
    if (size) std::memcpy(buf->data(), data, size);
    return Adopt(std::move(buf));
  }
  static Value FromString(std::string_view s) { return CopyOf(s.data(), s.size()); }

  // Takes ownership of `v` without copying its elements.
  template <typename T>
  static Value FromVector(std::vector<T> v) {
    static_assert(std::is_trivially_copyable_v<T>);
    return Adopt(std::make_shared<std::vector<T>>(std::move(v)));
  }
  // Shares ownership of an existing immutable vector.
  template <typename T>
  static Value Adopt(std::shared_ptr<const std::vector<T>> v) {
    Value out;
    out.data_ = reinterpret_cast<const std::byte*>(v->data());
    out.size_ = v->size() * sizeof(T);
    out.owner_ = std::move(v);
    return out;
  }
  template <typename T>
  static Value Adopt(std::shared_ptr<std::vector<T>> v) {
    return Adopt(std::shared_ptr<const std::vector<T>>(std::move(v)));
  }

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::string_view AsString() const {
    return std::string_view(reinterpret_cast<const char*>(data_), size_);
  }
  // REQUIRES: size() is a multiple of sizeof(T) and data() is aligned for T.
  template <typename T>
  std::span<const T> As() const {
    return std::span<const T>(reinterpret_cast<const T*>(data_), size_ / sizeof(T));
  }
  // True when both values share one buffer (no copy was made).
  bool SharesBufferWith(const Value& other) const {
    return owner_ == other.owner_ && data_ == other.data_;
  }

 private:
  std::shared_ptr<const void> owner_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace acan
