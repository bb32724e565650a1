#pragma once
// SGLang's expert-load statistics, `{"logical_count": ...}`, read as the JSON streams past (no
// document is built: 8 bytes a count are held, not the 30-odd of a parsed JSON value). Two
// shapes: run totals, [layer][expert], as SGLang's team published them; or what SGLang's expert
// distribution recorder keeps in its "stat" mode, [forward pass][layer][expert], a buffer of
// recent passes (its .pt dump converted to JSON: traces/README.md, "Importers").

#include <cstdint>
#include <string>
#include <vector>

namespace topoep {

struct SglangLogicalCount {
  bool per_pass = false;  // the file's logical_count has three dimensions
  int passes = 0;         // 1 for run totals
  int layers = 0;
  int experts = 0;
  std::vector<std::int64_t> counts;  // [passes][layers][experts], tokens, never negative

  // Layer `layer`'s counts in pass `pass`: `experts` values.
  const std::int64_t* row(int pass, int layer) const {
    return counts.data() + (static_cast<std::size_t>(pass) * layers + layer) * experts;
  }
};

// Throws FileInputError naming the file and field ("logical_count[2][7][31]") for invalid JSON,
// no logical_count, arrays of two or three dimensions that are ragged or mix numbers with
// arrays, or a count that is negative, not whole, or makes a row (one layer of one pass) sum
// past 9e18. Other keys (SGLang writes "rank") are skipped; of a key given twice the last counts.
SglangLogicalCount read_sglang_stats_file(const std::string& path);

}  // namespace topoep
