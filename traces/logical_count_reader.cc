#include "traces/logical_count_reader.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_input_error.h"

namespace topoep {
namespace {

constexpr double kMaxRowSum = 9e18;  // what sample_counts_from_shares() can draw below

// nlohmann's SAX events of the file, kept only where they are logical_count's. Depth counts
// every open object and array; logical_count's outer array is at depth 2 (inside the root
// object), so its level-k arrays (1: outer) are at depth k + 1.
class LogicalCountHandler {
 public:
  using json = nlohmann::json;

  LogicalCountHandler(const std::string& path, SglangLogicalCount* out) : path_(path), out_(out) {}

  // Whether a logical_count was read.
  bool found() const { return found_; }
  int dims() const { return dims_; }
  std::int64_t length(int level) const { return length_[level]; }

  bool null() { return other("null"); }
  bool boolean(bool) { return other("a boolean"); }
  bool string(json::string_t&) { return other("a string"); }
  bool binary(json::binary_t&) { return other("binary data"); }
  // The count's text is made only for an error: a buffer of passes holds millions of counts.
  bool number_integer(json::number_integer_t value) {
    return number(static_cast<double>(value), value >= 0, [&] { return std::to_string(value); });
  }
  bool number_unsigned(json::number_unsigned_t value) {
    return number(static_cast<double>(value), true, [&] { return std::to_string(value); });
  }
  bool number_float(json::number_float_t value, const json::string_t& text) {
    return number(value, value >= 0 && value == std::floor(value), [&] { return text; });
  }

  bool start_object(std::size_t) {
    if (inside()) other("an object");
    ++depth_;
    return true;
  }
  bool end_object() {
    --depth_;
    return true;
  }
  bool key(json::string_t& name) {
    if (depth_ != 1) return true;
    next_is_logical_count_ = name == "logical_count";
    return true;
  }
  bool start_array(std::size_t) {
    if (depth_ == 0) {
      throw FileInputError(path_, "logical_count",
                           "the file must be a JSON object holding logical_count");
    }
    if (depth_ == 1 && next_is_logical_count_) begin();
    ++depth_;
    if (!inside()) return true;
    const int at = level();  // this array's level
    if (at > 1) ++index_[at - 2];
    if (at > 3 || (dims_ != 0 && at > dims_)) {
      throw FileInputError(path_, field(at),
                           "is an array where a count belongs: logical_count is "
                           "[layer][expert] or [pass][layer][expert]");
    }
    index_[at - 1] = 0;
    row_sum_ = 0;
    return true;
  }
  bool end_array() {
    if (inside()) {
      const int at = level();
      if (length_[at - 1] < 0) {
        length_[at - 1] = index_[at - 1];
      } else if (length_[at - 1] != index_[at - 1]) {
        throw FileInputError(path_, field(at),
                             "must hold " + std::to_string(length_[at - 1]) +
                                 " entries, as the first array of its level does (it holds " +
                                 std::to_string(index_[at - 1]) + ")");
      }
      if (at == 1) in_logical_count_ = false;  // what follows is another key's
    }
    --depth_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& error) {
    throw FileInputError(path_, "",
                         "invalid JSON at byte " + std::to_string(position) + ": " + error.what());
  }

 private:
  // Whether the event is inside logical_count (its outer array open).
  bool inside() const { return in_logical_count_ && depth_ >= 2; }
  // The level of the innermost open array of logical_count (1: its outer array).
  int level() const { return depth_ - 1; }

  void begin() {
    found_ = true;
    in_logical_count_ = true;
    dims_ = 0;
    for (int i = 0; i < 3; ++i) length_[i] = -1;
    out_->counts.clear();
  }

  bool other(const char* what) {
    if (inside()) {
      throw FileInputError(path_, field(level()) + "[" + std::to_string(index_[level() - 1]) + "]",
                           std::string("must be a non-negative whole number, got ") + what);
    }
    if (depth_ == 0) {
      throw FileInputError(path_, "logical_count",
                           "the file must be a JSON object holding logical_count");
    }
    return true;
  }

  template <typename Text>
  bool number(double value, bool whole_non_negative, const Text& text) {
    if (!inside()) {
      return depth_ == 0 ? other("a number") : true;
    }
    const int at = level();
    const auto here = [&] { return field(at) + "[" + std::to_string(index_[at - 1]) + "]"; };
    if (dims_ == 0) {
      if (at < 2) {
        throw FileInputError(path_, here(),
                             "must be an array: logical_count is [layer][expert] or "
                             "[pass][layer][expert]");
      }
      dims_ = at;
    }
    if (at != dims_) {
      throw FileInputError(path_, here(),
                           "is a count where an array belongs: every count must be at the same "
                           "depth as logical_count's first");
    }
    if (!whole_non_negative || value > kMaxRowSum) {
      throw FileInputError(path_, here(), "must be a non-negative whole number, got " + text());
    }
    ++index_[at - 1];
    row_sum_ += value;
    if (row_sum_ > kMaxRowSum) {
      throw FileInputError(path_, field(at),
                           "sums past 9e18 tokens by expert " + std::to_string(index_[at - 1] - 1) +
                               ": too many to sample from");
    }
    out_->counts.push_back(static_cast<std::int64_t>(value));
    return true;
  }

  // The open array of level `levels`, by its position in each level above: "logical_count[i][j]".
  std::string field(int levels) const {
    std::string name = "logical_count";
    for (int k = 1; k < levels && k <= 3; ++k)
      name += "[" + std::to_string(index_[k - 1] - 1) + "]";
    return name;
  }

  const std::string& path_;
  SglangLogicalCount* out_;
  int depth_ = 0;
  bool next_is_logical_count_ = false;
  bool in_logical_count_ = false;
  bool found_ = false;
  int dims_ = 0;                           // 2 or 3 once the first count is read
  std::int64_t index_[3] = {0, 0, 0};      // entries read so far in the open array of each level
  std::int64_t length_[3] = {-1, -1, -1};  // each level's arrays' length (-1: none closed yet)
  double row_sum_ = 0;                     // the open innermost array's counts
};

}  // namespace

SglangLogicalCount read_sglang_stats_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileInputError(path, "", "cannot open the file for reading");
  SglangLogicalCount result;
  LogicalCountHandler handler(path, &result);
  nlohmann::json::sax_parse(in, &handler);
  if (!handler.found()) {
    throw FileInputError(path, "logical_count", "must be an array of per-layer arrays");
  }
  result.per_pass = handler.dims() == 3;
  if (handler.dims() == 0) return result;  // no count: no layer with tokens either
  const int d = handler.dims();
  result.passes = result.per_pass ? static_cast<int>(handler.length(0)) : 1;
  result.layers = static_cast<int>(handler.length(d - 2));
  result.experts = static_cast<int>(handler.length(d - 1));
  return result;
}

}  // namespace topoep
