#pragma once
// AlignedBuffer<T>: a 64-byte aligned, non-copyable array of trivially copyable T.
//
// Capacity is separate from size so sparse structures can be preallocated once and rebuilt
// after every mask update without touching the allocator: resize() within capacity never
// allocates. New elements are not initialised unless asked for (kernels overwrite them).
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <type_traits>
#include <utility>

#include <sys/mman.h>

namespace sparsetrain {

inline constexpr std::size_t kAlignment = 64;
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;

template <typename T>
class AlignedBuffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t size) { resize(size); }
  AlignedBuffer(std::size_t size, T fill) {
    resize(size);
    std::fill(data_, data_ + size_, fill);
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& other) noexcept { swap(other); }
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    AlignedBuffer(std::move(other)).swap(*this);
    return *this;
  }
  ~AlignedBuffer() { std::free(data_); }

  void swap(AlignedBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

  // Grows capacity to at least n, keeping the current elements.
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    const std::size_t align = n * sizeof(T) >= kHugePage ? kHugePage : kAlignment;
    std::size_t bytes = (n * sizeof(T) + align - 1) / align * align;
    T* fresh = static_cast<T*>(std::aligned_alloc(align, bytes));
    if (fresh == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    // Advice only: where the kernel refuses (THP off), the buffer keeps 4 KB pages.
    if (align == kHugePage) madvise(fresh, bytes, MADV_HUGEPAGE);
#endif
    if (size_ > 0) std::memcpy(fresh, data_, size_ * sizeof(T));
    std::free(data_);
    data_ = fresh;
    capacity_ = n;
  }
  // Grows geometrically past capacity so appending one element at a time stays linear.
  void resize(std::size_t n) {
    if (n > capacity_) reserve(std::max(n, capacity_ * 2));
    size_ = n;
  }
  void assign(std::size_t n, T fill) {
    resize(n);
    std::fill(data_, data_ + n, fill);
  }
  AlignedBuffer clone() const {
    AlignedBuffer copy(size_);
    if (size_ > 0) std::memcpy(copy.data_, data_, size_ * sizeof(T));
    return copy;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t bytes() const { return capacity_ * sizeof(T); }  // memory held
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  std::span<T> span() { return {data_, size_}; }
  std::span<const T> span() const { return {data_, size_}; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace sparsetrain
