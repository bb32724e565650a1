#pragma once
// Cuts a trace down to a range of steps and a subset of layers, streaming.

#include <string>
#include <vector>

namespace topoep {

struct TraceSlice {
  int first_step = 0;
  int end_step = -1;        // exclusive; -1: to the end
  std::vector<int> layers;  // kept layers, ascending; empty: all
};

// Writes the records of `slice` from `in` to a new trace `out`, steps renumbered from 0 and
// layers from 0 in the order kept; the source and slice go into the metadata. Throws
// InputError naming "steps" or "layers" for a range outside the trace. Returns records written.
std::int64_t slice_trace(const std::string& in, const TraceSlice& slice, const std::string& out);

// Parses "a:b", "a:" or ":b" (steps) into the slice; throws InputError naming "steps".
void parse_step_range(const std::string& text, TraceSlice* slice);

}  // namespace topoep
