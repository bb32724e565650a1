#pragma once
// Strict reading of JSON objects: typed fields with range checks, required and optional fields,
// and unknown fields rejected, each error a FileInputError naming the file and the field path.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/file_input_error.h"

namespace topoep {

// Parses `text`; throws FileInputError(origin, "", "invalid JSON ...") on a syntax error.
nlohmann::json parse_json_text(const std::string& text, const std::string& origin);

// Reads the whole file; throws FileInputError when it cannot be opened or read.
std::string read_text_file(const std::string& path);

// A view of one JSON object at a field path ("" for the root, "gpu.peak_tflops" deeper).
// Each accessor records the key as known; finish() then rejects keys nobody asked for, except
// "comment", which any object may carry for people.
class JsonObjectReader {
 public:
  // Throws FileInputError unless `value` is an object.
  JsonObjectReader(const nlohmann::json& value, std::string origin, std::string path);

  bool has(const std::string& key) const;
  std::string string_field(const std::string& key);
  std::int64_t int_field(const std::string& key, std::int64_t min, std::int64_t max);
  // Finite number; `min_exclusive` makes the lower bound strict (e.g. bandwidth > 0).
  double number_field(const std::string& key, double min, bool min_exclusive, double max);
  std::vector<double> number_array_field(const std::string& key);
  JsonObjectReader object_field(const std::string& key);
  // Any value, unchecked, for callers that parse it themselves (still marked as known).
  const nlohmann::json& raw_field(const std::string& key) { return require(key); }
  // Throws on the first unknown key, in alphabetical order.
  void finish() const;

  const std::string& origin() const { return origin_; }
  // "path.key" (or "key" at the root), as used in error messages.
  std::string field_path(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  const nlohmann::json& require(const std::string& key);

  const nlohmann::json& value_;
  std::string origin_;
  std::string path_;
  std::vector<std::string> known_;
};

}  // namespace topoep
