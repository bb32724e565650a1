#pragma once
// SplitMix64: a tiny PRNG whose output is defined bit for bit by integer arithmetic, so seeded
// data (test corpora, synthetic traces) is identical on every platform and compiler, unlike the
// standard library's distributions.

#include <cmath>
#include <cstdint>

namespace topoep {

class SplitMix64 {
 public:
  // Each next() adds kGamma to the state: the generator n values ahead is the one whose seed is
  // state() + n x kGamma (mod 2^64), which lets a stream be split among threads.
  static constexpr std::uint64_t kGamma = 0x9e3779b97f4a7c15ull;

  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t state() const { return state_; }

  std::uint64_t next() {
    std::uint64_t z = (state_ += kGamma);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound) for bound >= 1 (rejection sampling: no modulo bias).
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = ~0ull - (~0ull % bound);
    std::uint64_t value;
    do {
      value = next();
    } while (value >= limit);
    return value % bound;
  }

  // Uniform in (0, 1): the top 53 bits, offset by half a step so that 0 never comes out.
  double uniform_open() {
    return (static_cast<double>(next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  }

  // Standard normal by Box-Muller (one of the pair; two uniform draws per call). Exact where
  // libm's log, sqrt and cos are.
  double normal() {
    const double radius = std::sqrt(-2.0 * std::log(uniform_open()));
    return radius * std::cos(2.0 * 3.14159265358979323846 * uniform_open());
  }

 private:
  std::uint64_t state_;
};

// SplitMix64::below(bound), bit for bit, for many draws below one bound: the rejection limit is
// found once, and the remainder by a multiply instead of a 64-bit division (Granlund and
// Montgomery's division by invariant integers, exact for every 64-bit value). Seeded generators
// draw hundreds of millions of values below a handful of bounds; the division was their cost.
class DrawsBelow {
 public:
  explicit DrawsBelow(std::uint64_t bound) : bound_(bound), limit_(~0ull - (~0ull % bound)) {
    // ceil(log2(bound)); 0 for a bound of 1.
    const int log2_ceil = bound > 1 ? 64 - __builtin_clzll(bound - 1) : 0;
    const unsigned __int128 excess =
        (static_cast<unsigned __int128>(1) << log2_ceil) - bound;  // 2^l - bound < bound
    multiplier_ = static_cast<std::uint64_t>((excess << 64) / bound) + 1;
    shift1_ = log2_ceil < 1 ? log2_ceil : 1;
    shift2_ = log2_ceil > 1 ? log2_ceil - 1 : 0;
  }

  std::uint64_t operator()(SplitMix64& random) const {
    std::uint64_t value;
    do {
      value = random.next();
    } while (value >= limit_);
    return value - quotient(value) * bound_;
  }

  // floor(n / bound) for every 64-bit n.
  std::uint64_t quotient(std::uint64_t n) const {
    const auto high =
        static_cast<std::uint64_t>((static_cast<unsigned __int128>(multiplier_) * n) >> 64);
    return (high + ((n - high) >> shift1_)) >> shift2_;
  }

 private:
  std::uint64_t bound_, limit_, multiplier_ = 0;
  int shift1_ = 0, shift2_ = 0;
};

}  // namespace topoep
