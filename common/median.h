#pragma once
// The median of a sample, as the toolkit reports it (the simulator's per-record balance, the
// harness's repeated timings, trace info's per-layer balance).

#include <algorithm>
#include <vector>

namespace topoep {

// The middle value of `values`, the mean of the two middle ones for an even count; 0 for none.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace topoep
