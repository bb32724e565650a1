#include "traces/trace_slice.h"

#include <algorithm>

#include "solver/input_error.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace topoep {

void parse_step_range(const std::string& text, TraceSlice* slice) {
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos)
    throw InputError("steps", "must be a:b, a: or :b (got '" + text + "')");
  try {
    const std::string first = text.substr(0, colon), end = text.substr(colon + 1);
    slice->first_step = first.empty() ? 0 : std::stoi(first);
    slice->end_step = end.empty() ? -1 : std::stoi(end);
  } catch (const std::exception&) {
    throw InputError("steps", "must be a:b with integers (got '" + text + "')");
  }
}

std::int64_t slice_trace(const std::string& in, const TraceSlice& slice, const std::string& out) {
  TraceReader reader(in);
  const TraceMetadata& source = reader.metadata();
  const int end = slice.end_step < 0 ? source.steps : slice.end_step;
  if (slice.first_step < 0 || end > source.steps || slice.first_step >= end) {
    throw InputError("steps", std::to_string(slice.first_step) + ":" + std::to_string(end) +
                                  " is not a non-empty range within the trace's " +
                                  std::to_string(source.steps) + " steps");
  }
  std::vector<int> layers = slice.layers;
  if (layers.empty()) {
    for (int l = 0; l < source.num_layers; ++l) layers.push_back(l);
  }
  std::vector<int> new_index(source.num_layers, -1);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (layers[i] < 0 || layers[i] >= source.num_layers || (i > 0 && layers[i] <= layers[i - 1])) {
      throw InputError("layers", "must be ascending layer ids within the trace's " +
                                     std::to_string(source.num_layers) + " layers");
    }
    new_index[layers[i]] = static_cast<int>(i);
  }
  TraceMetadata m = source;
  m.steps = end - slice.first_step;
  m.num_layers = static_cast<int>(layers.size());
  m.dtype.clear();
  m.records_per_chunk = 0;
  m.source = source.source + " (sliced: steps " + std::to_string(slice.first_step) + ":" +
             std::to_string(end) + ")";
  m.packing["slice"] = {
      {"from", in}, {"first_step", slice.first_step}, {"end_step", end}, {"layers", layers}};
  TraceWriter writer(out, m, ProgressDisplay::kTerminal);
  TraceRecord record;
  while (reader.next(record)) {
    if (record.step < slice.first_step || record.step >= end || new_index[record.layer] < 0)
      continue;
    writer.add(record.counts);
  }
  writer.finish();
  return m.num_records();
}

}  // namespace topoep
