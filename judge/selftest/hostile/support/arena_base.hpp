// The arena of exercise 01, written plainly and correct for stages 1 to 3, with two hooks a
// hostile file fills in before it includes this one:
//
//   namespace alloclab_hostile {
//   inline void on_allocate(std::size_t n) { ... }   // runs first in every allocate()
//   inline bool frees_its_buffer() { return true; }   // false: the destructor leaks
//   }
//
// Each file of the hostile corpus is then a few lines that do one bad thing, and the judge's
// verdict on it depends on that one thing only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>

namespace alloclab {

class Arena {
 public:
  static constexpr std::size_t kBufferAlignment = 4096;

  explicit Arena(std::size_t capacity) : capacity_(capacity) {
    if (capacity == 0) throw std::invalid_argument("Arena: capacity must be greater than 0");
    buffer_ = static_cast<std::byte*>(::operator new(capacity_, std::align_val_t{kBufferAlignment}));
  }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  ~Arena() {
    if (alloclab_hostile::frees_its_buffer()) ::operator delete(buffer_, std::align_val_t{kBufferAlignment});
  }

  void* allocate(std::size_t n, std::size_t align = alignof(std::max_align_t)) {
    alloclab_hostile::on_allocate(n);
    if (align == 0 || (align & (align - 1)) != 0) throw std::invalid_argument("align must be a power of two");
    const auto here = reinterpret_cast<std::uintptr_t>(buffer_) + used_;
    const std::size_t padding = static_cast<std::size_t>(-here & (align - 1));
    const std::size_t left = capacity_ - used_;
    if (padding > left || n > left - padding) throw std::bad_alloc();
    std::byte* p = buffer_ + used_ + padding;
    used_ += padding + n;
    if (used_ > peak_) peak_ = used_;
    return p;
  }

  template <class T>
  T* alloc_array(std::size_t count) {
    if (count > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate(count * sizeof(T), alignof(T)));
  }

  void reset() noexcept { used_ = 0; }
  std::size_t used() const noexcept { return used_; }
  std::size_t peak() const noexcept { return peak_; }
  std::size_t capacity() const noexcept { return capacity_; }

  struct Marker {
    std::size_t offset;
  };
  Marker mark() const noexcept { return Marker{used_}; }
  void rewind(Marker m) noexcept {
    if (m.offset <= used_) used_ = m.offset;
  }

 private:
  std::byte* buffer_ = nullptr;
  std::size_t capacity_;
  std::size_t used_ = 0;
  std::size_t peak_ = 0;
};

}  // namespace alloclab
