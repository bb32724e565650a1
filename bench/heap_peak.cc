#include "bench/heap_peak.h"

#include <malloc.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace topoep {
namespace bench {
namespace {

// Relaxed: the counters are read after the work they measure has joined its threads.
std::atomic<std::int64_t> g_live{0};
std::atomic<std::int64_t> g_peak{0};

void note_allocated(void* block) {
  const auto bytes = static_cast<std::int64_t>(malloc_usable_size(block));
  const std::int64_t now = g_live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void release(void* block) noexcept {
  if (block == nullptr) return;
  g_live.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(block)), std::memory_order_relaxed);
  std::free(block);
}

// nullptr when the allocator has no memory left.
void* try_allocate(std::size_t bytes, std::size_t alignment) noexcept {
  if (bytes == 0) bytes = 1;  // every new returns a distinct block
  void* block = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    block = std::malloc(bytes);
  } else {
    // aligned_alloc() wants a multiple of the alignment.
    const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    block = rounded < bytes ? nullptr : std::aligned_alloc(alignment, rounded);
  }
  if (block != nullptr) note_allocated(block);
  return block;
}

void* allocate(std::size_t bytes, std::size_t alignment) {
  void* block = try_allocate(bytes, alignment);
  if (block == nullptr) throw std::bad_alloc();
  return block;
}

constexpr std::size_t kPlain = alignof(std::max_align_t);

}  // namespace

std::int64_t live_heap_bytes() { return g_live.load(std::memory_order_relaxed); }
std::int64_t peak_heap_bytes() { return g_peak.load(std::memory_order_relaxed); }
std::int64_t reset_heap_peak() {
  const std::int64_t live = live_heap_bytes();
  g_peak.store(live, std::memory_order_relaxed);
  return live;
}

}  // namespace bench
}  // namespace topoep

using topoep::bench::allocate;
using topoep::bench::kPlain;
using topoep::bench::release;
using topoep::bench::try_allocate;

void* operator new(std::size_t bytes) { return allocate(bytes, kPlain); }
void* operator new[](std::size_t bytes) { return allocate(bytes, kPlain); }
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  return try_allocate(bytes, kPlain);
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
  return try_allocate(bytes, kPlain);
}
void* operator new(std::size_t bytes, std::align_val_t alignment) {
  return allocate(bytes, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t bytes, std::align_val_t alignment) {
  return allocate(bytes, static_cast<std::size_t>(alignment));
}
void* operator new(std::size_t bytes, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return try_allocate(bytes, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t bytes, std::align_val_t alignment,
                     const std::nothrow_t&) noexcept {
  return try_allocate(bytes, static_cast<std::size_t>(alignment));
}

void operator delete(void* block) noexcept { release(block); }
void operator delete[](void* block) noexcept { release(block); }
void operator delete(void* block, std::size_t) noexcept { release(block); }
void operator delete[](void* block, std::size_t) noexcept { release(block); }
void operator delete(void* block, const std::nothrow_t&) noexcept { release(block); }
void operator delete[](void* block, const std::nothrow_t&) noexcept { release(block); }
void operator delete(void* block, std::align_val_t) noexcept { release(block); }
void operator delete[](void* block, std::align_val_t) noexcept { release(block); }
void operator delete(void* block, std::size_t, std::align_val_t) noexcept { release(block); }
void operator delete[](void* block, std::size_t, std::align_val_t) noexcept { release(block); }
void operator delete(void* block, std::align_val_t, const std::nothrow_t&) noexcept {
  release(block);
}
void operator delete[](void* block, std::align_val_t, const std::nothrow_t&) noexcept {
  release(block);
}
