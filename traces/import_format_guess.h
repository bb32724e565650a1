#pragma once
// What to tell a user who hands a reader something that is not a trace: recorded routing data
// (the shared samples, a recorder's output) is a common mix-up, and the importer that fits it
// can be named from the file names and the first line of a CSV, without parsing the data.

#include <string>

namespace topoep {

struct ImportFormatGuess {
  std::string format;       // a `topoep trace import --format` value; empty: none recognised
  std::string description;  // what the data looks like, e.g. "ESFT expert_weights files"
};

// Looks at `path` (a file or a directory, not descending into subdirectories): ESFT's
// expert_weights_<L>.txt, FLAME-MoE's router CSVs (a header with expert_ columns) or other
// per-token CSVs, .npy arrays, .jsonl files, or a JSON file with a logical_count (SGLang's
// statistics), in that order of precedence. Deterministic: files are taken in name order.
ImportFormatGuess guess_import_format(const std::string& path);

// The error for a path that is no trace directory: it says what is missing and, where the
// data is recognised, the import command that converts it. Throws FileInputError naming `path`.
[[noreturn]] void throw_not_a_trace(const std::string& path);

}  // namespace topoep
