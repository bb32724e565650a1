#include "traces/import_format_guess.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <vector>

#include "common/file_input_error.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The first `bytes` of a file (less if it is shorter; empty if it cannot be read).
std::string file_prefix(const fs::path& file, std::size_t bytes) {
  std::ifstream in(file, std::ios::binary);
  std::string prefix(bytes, '\0');
  in.read(prefix.data(), static_cast<std::streamsize>(bytes));
  prefix.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return prefix;
}

bool is_esft_layer_file(const std::string& name) {
  const std::string stem = "expert_weights_";
  if (name.rfind(stem, 0) != 0 || !ends_with(name, ".txt")) return false;
  const std::string number = name.substr(stem.size(), name.size() - stem.size() - 4);
  return !number.empty() &&
         std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// SGLang's statistics open with their one key; 4 KiB covers any whitespace before it.
bool holds_logical_count(const fs::path& file) {
  return file_prefix(file, 4096).find("\"logical_count\"") != std::string::npos;
}

// A FLAME-MoE CSV's header names its experts' columns (expert_0, ...); a top-k CSV holds ids.
ImportFormatGuess csv_guess(const fs::path& file) {
  const std::string head = file_prefix(file, 4096);
  const std::string first_line = head.substr(0, head.find('\n'));
  if (first_line.find("expert_") != std::string::npos) {
    return {"flame-csv", "FLAME-MoE router-probability CSVs"};
  }
  return {"topk-csv", "per-token top-k CSVs"};
}

ImportFormatGuess guess_file(const fs::path& file) {
  const std::string name = file.filename().string();
  if (ends_with(name, ".jsonl")) return {"jsonl", "per-rank routing counts in JSON lines"};
  if (ends_with(name, ".json") && holds_logical_count(file)) {
    return {"sglang-stats", "SGLang expert-load statistics"};
  }
  return {};
}

ImportFormatGuess guess_directory(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (it->is_regular_file(error)) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  const auto first_named = [&](auto&& matches) -> const fs::path* {
    for (const fs::path& file : files) {
      if (matches(file.filename().string())) return &file;
    }
    return nullptr;
  };
  if (first_named(is_esft_layer_file)) return {"esft", "ESFT expert_weights files"};
  if (const fs::path* csv = first_named([](const std::string& n) { return ends_with(n, ".csv"); }))
    return csv_guess(*csv);
  if (first_named([](const std::string& n) { return ends_with(n, ".npy"); })) {
    return {"topk-npy", "top-k .npy arrays"};
  }
  if (first_named([](const std::string& n) { return ends_with(n, ".jsonl"); })) {
    return {"jsonl", "per-rank routing counts in JSON lines"};
  }
  return {};
}

}  // namespace

ImportFormatGuess guess_import_format(const std::string& path) {
  std::error_code error;
  if (fs::is_directory(path, error)) return guess_directory(path);
  if (fs::is_regular_file(path, error)) return guess_file(path);
  return {};
}

void throw_not_a_trace(const std::string& path) {
  std::error_code error;
  if (!fs::exists(path, error)) {
    throw FileInputError(path, "",
                         "no such file or directory (a trace is a directory with an index.json, "
                         "as `topoep trace synth` and `topoep trace import` write it)");
  }
  const bool directory = fs::is_directory(path, error);
  std::string message = directory ? "not a TopoEP trace: the directory has no index.json"
                                  : "not a TopoEP trace: a trace is a directory with an index.json";
  const ImportFormatGuess guess = guess_import_format(path);
  if (!guess.format.empty()) {
    message += "; it looks like " + guess.description + ", which `topoep trace import --format " +
               guess.format + " --input " + path + " --out DIR` converts";
  } else {
    message +=
        "; recorded routing data converts with `topoep trace import --format "
        "esft|flame-csv|topk-csv|topk-npy|sglang-stats|jsonl --input PATH --out DIR`";
  }
  throw FileInputError(path, "", message + " (traces/README.md, \"Importers\")");
}

}  // namespace topoep
