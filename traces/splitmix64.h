#pragma once
// SplitMix64: a tiny PRNG whose output is defined bit for bit by integer arithmetic, so seeded
// data (test corpora, synthetic traces) is identical on every platform and compiler, unlike the
// standard library's distributions.

#include <cmath>
#include <cstdint>

namespace topoep {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
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

}  // namespace topoep
