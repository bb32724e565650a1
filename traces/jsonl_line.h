#pragma once
// One line of the JSON lines a recorder writes (trace_import.h, import_jsonl()):
// {"step", "microbatch", "layer", "rank", "counts": [...]}, read as nlohmann's document model
// would read it, without building the document. Parsing is most of an import's time.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "solver/types.h"

namespace topoep {

struct CountsLine {
  int keys[4] = {0, 0, 0, 0};      // step, microbatch, layer, rank: each in [0, 2^30]
  std::vector<TokenCount> counts;  // non-negative, at least one
  int top_k =
      0;  // the optional "top_k" (tools/routing_recorder.py writes it): 1 to 2^16, 0 if none
};

// The common case, quickly: a line of exactly the five fields (and an optional "top_k"), integer
// values and a flat array of counts, plain JSON spacing. True when it read the line (then it is
// valid JSON and means what the document model reads in it); false leaves the verdict to
// read_counts_line().
bool read_counts_line_fast(std::string_view line, CountsLine* out);

// Any line, by nlohmann's SAX parser: true when it is a JSON object whose four keys are
// integers in [0, 2^30], whose counts are a non-empty array of non-negative integers and whose
// top_k, if given, is an integer in [1, 2^16] (a key given twice counts by its last value; other
// fields are skipped).
bool read_counts_line(const std::string& line, CountsLine* out);

// Both in turn; throws FileInputError naming `path`, "line N" and the first wrong field, in the
// order the fields are listed, for a line neither takes.
void read_counts_line_or_throw(const std::string& path, std::int64_t number,
                               const std::string& line, CountsLine* out);

}  // namespace topoep
