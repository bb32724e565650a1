// DrawsBelow replaces SplitMix64::below()'s division by a multiply: it must give the same
// quotient for every 64-bit value and every bound, and so the same draws, or every seeded
// trace would change.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "traces/splitmix64.h"

namespace topoep {
namespace {

// Bounds where division by invariant integers has its edge cases: 1, powers of two and their
// neighbours, the top half of the range, and the largest value.
std::vector<std::uint64_t> edge_bounds() {
  std::vector<std::uint64_t> bounds = {1, 2, 3, 5, 7, 10, 641, 6700417, ~0ull, ~0ull - 1};
  for (int k = 1; k < 64; ++k) {
    const std::uint64_t power = 1ull << k;
    bounds.insert(bounds.end(), {power - 1, power, power + 1});
  }
  return bounds;
}

std::vector<std::uint64_t> edge_values(std::uint64_t bound) {
  std::vector<std::uint64_t> values = {0, 1, bound - 1, bound, ~0ull, ~0ull - 1, ~0ull >> 1};
  if (bound < ~0ull) values.push_back(bound + 1);
  for (std::uint64_t m : {2ull, 3ull, 1000ull}) {
    if (bound <= ~0ull / m) values.insert(values.end(), {m * bound - 1, m * bound});
  }
  return values;
}

TEST(DrawsBelow, QuotientEqualsDivisionAtTheEdges) {
  for (const std::uint64_t bound : edge_bounds()) {
    const DrawsBelow draws(bound);
    for (const std::uint64_t n : edge_values(bound)) {
      ASSERT_EQ(draws.quotient(n), n / bound) << n << " / " << bound;
    }
  }
}

TEST(DrawsBelow, QuotientEqualsDivisionForRandomBoundsAndValues) {
  SplitMix64 random(7);
  for (int b = 0; b < 2000; ++b) {
    // Bounds of every magnitude: a random value shifted right by 0 to 63 bits.
    const std::uint64_t bound = (random.next() >> random.below(64)) | 1ull << random.below(2);
    const DrawsBelow draws(bound);
    for (int i = 0; i < 500; ++i) {
      const std::uint64_t n = random.next() >> random.below(64);
      ASSERT_EQ(draws.quotient(n), n / bound) << n << " / " << bound;
    }
  }
}

TEST(DrawsBelow, DrawsTheSameSequenceAsBelow) {
  for (const std::uint64_t bound : edge_bounds()) {
    SplitMix64 a(bound), b(bound);
    const DrawsBelow draws(bound);
    for (int i = 0; i < 200; ++i) ASSERT_EQ(draws(a), b.below(bound)) << "bound " << bound;
  }
}

}  // namespace
}  // namespace topoep
