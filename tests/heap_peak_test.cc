// The heap counter behind bench/sim_memory_bench.cc: what it reports is what the program holds.

#include "bench/heap_peak.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace topoep {
namespace {

constexpr std::int64_t kBlock = 1 << 20;

// Where every block's address goes, so that no compiler elides an allocation it can see unused.
void* volatile g_escape = nullptr;
void escape(void* block) { g_escape = block; }

TEST(HeapPeak, AnAllocationRaisesTheLiveBytesAndThePeakByAtLeastItsSize) {
  const std::int64_t before = bench::reset_heap_peak();
  auto block = std::make_unique<char[]>(kBlock);
  escape(block.get());
  EXPECT_GE(bench::live_heap_bytes() - before, kBlock);
  EXPECT_GE(bench::peak_heap_bytes() - before, kBlock);
  block.reset();
  EXPECT_EQ(bench::live_heap_bytes(), before);
}

TEST(HeapPeak, ThePeakOutlivesTheBlockUntilReset) {
  const std::int64_t before = bench::reset_heap_peak();
  {
    std::vector<char> held(kBlock);
    escape(held.data());
  }
  EXPECT_EQ(bench::live_heap_bytes(), before);
  EXPECT_GE(bench::peak_heap_bytes() - before, kBlock);
  EXPECT_EQ(bench::reset_heap_peak(), before);
  EXPECT_EQ(bench::peak_heap_bytes(), before);
}

TEST(HeapPeak, ThePeakIsTheMostHeldAtOnceNotTheSumOfAllocations) {
  const std::int64_t before = bench::reset_heap_peak();
  for (int i = 0; i < 8; ++i) {
    std::vector<char> held(kBlock);
    escape(held.data());
  }
  EXPECT_GE(bench::peak_heap_bytes() - before, kBlock);
  EXPECT_LT(bench::peak_heap_bytes() - before, 2 * kBlock);
}

struct alignas(256) Aligned {
  char bytes[256];
};

TEST(HeapPeak, OverAlignedBlocksAreCountedAndReleased) {
  const std::int64_t before = bench::reset_heap_peak();
  auto block = std::make_unique<Aligned[]>(kBlock / 256);
  escape(block.get());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(block.get()) % 256, 0u);
  EXPECT_GE(bench::live_heap_bytes() - before, kBlock);
  block.reset();
  EXPECT_EQ(bench::live_heap_bytes(), before);
}

TEST(HeapPeak, NothrowNewIsCountedToo) {
  const std::int64_t before = bench::reset_heap_peak();
  char* block = new (std::nothrow) char[kBlock];
  ASSERT_NE(block, nullptr);
  escape(block);
  EXPECT_GE(bench::live_heap_bytes() - before, kBlock);
  delete[] block;
  EXPECT_EQ(bench::live_heap_bytes(), before);
}

}  // namespace
}  // namespace topoep
