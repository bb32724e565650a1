#pragma once
// The seeds a randomised test runs: its own default range, or the environment variable's,
// "LAST" (1 to LAST) or "FIRST-LAST", for a wider sweep than CI's, e.g.
// bazel test --test_env=TOPOEP_PROPERTY_SEEDS=1200001-4000000 //tests:topoep_solver_test

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace topoep::testing {

// {first, last}, inclusive; a malformed value fails the test and runs no seed.
inline std::pair<std::uint64_t, std::uint64_t> seed_range(const char* variable, std::uint64_t first,
                                                          std::uint64_t last) {
  const char* text = std::getenv(variable);
  if (text == nullptr) return {first, last};
  unsigned long long low = 0, high = 0;
  char end = 0;
  if (std::sscanf(text, "%llu-%llu%c", &low, &high, &end) == 2 && low >= 1 && high >= low) {
    return {low, high};
  }
  if (std::sscanf(text, "%llu%c", &high, &end) == 1 && high >= 1) return {1, high};
  ADD_FAILURE() << variable << ": expected LAST or FIRST-LAST with 1 <= FIRST <= LAST, got '"
                << text << "'";
  return {1, 0};
}

}  // namespace topoep::testing
