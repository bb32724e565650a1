#include "traces/jsonl_line.h"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/file_input_error.h"

namespace topoep {
namespace {

std::string where_line(std::int64_t line) { return "line " + std::to_string(line); }

const char* const kKeyNames[4] = {"step", "microbatch", "layer", "rank"};
constexpr std::int64_t kMaxTopK = 1 << 16;

// Parses one line with the JSON document model and throws the FileInputError naming the first
// field that is wrong, in the order the fields are listed: what a line neither reader takes
// gets, so that the errors do not depend on how it was read.
[[noreturn]] void throw_line_error(const std::string& path, std::int64_t number,
                                   const std::string& line) {
  const std::string where = where_line(number);
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& error) {
    throw FileInputError(path, where, std::string("invalid JSON: ") + error.what());
  }
  if (!value.is_object()) throw FileInputError(path, where, "must be a JSON object");
  for (const char* name : kKeyNames) {
    if (!value.contains(name)) throw FileInputError(path, where + " " + name, "is missing");
    if (!value[name].is_number_integer() || value[name].get<long long>() < 0 ||
        value[name].get<long long>() > (1 << 30)) {
      throw FileInputError(path, where + " " + name, "must be an integer from 0 to 2^30");
    }
  }
  if (!value.contains("counts") || !value["counts"].is_array() || value["counts"].empty()) {
    throw FileInputError(path, where + " counts", "must be a non-empty array of per-expert counts");
  }
  for (const auto& count : value["counts"]) {
    if (!count.is_number_integer() || count.get<long long>() < 0) {
      throw FileInputError(path, where + " counts",
                           "must hold non-negative integers, got " + count.dump());
    }
  }
  if (value.contains("top_k") &&
      (!value["top_k"].is_number_integer() || value["top_k"].get<long long>() < 1 ||
       value["top_k"].get<long long>() > kMaxTopK)) {
    throw FileInputError(path, where + " top_k", "must be an integer from 1 to 65536");
  }
  // Not reached: LineFields takes every line this takes.
  throw FileInputError(path, where, "could not be read");
}

// The fields of one line as nlohmann's SAX parser meets them, with no document built (a
// third of the import's time went into building one a line). It judges a line as the document
// model would: a key given twice counts by its last value, and fields it does not know are
// skipped whatever they hold. Whatever it does not take (a parse error, a field missing or of
// the wrong kind) throw_line_error() names.
class LineFields {
 public:
  using json = nlohmann::json;

  explicit LineFields(CountsLine* out) : keys(out->keys), counts(out->counts), top_k(out->top_k) {}

  // Parses `line`; whether every field is there and right.
  bool read(const std::string& line) {
    counts.clear();  // keeps its capacity from line to line
    top_k = 0;
    return json::sax_parse(line, this) && object_ && have_[0] && have_[1] && have_[2] && have_[3] &&
           counts_ok_ && !counts.empty() && top_k_ok_;
  }

  bool null() { return scalar(false, 0); }
  bool boolean(bool) { return scalar(false, 0); }
  bool number_integer(json::number_integer_t value) { return scalar(true, value); }
  bool number_unsigned(json::number_unsigned_t value) {
    return value > static_cast<json::number_unsigned_t>(INT64_MAX)
               ? scalar(false, 0)
               : scalar(true, static_cast<std::int64_t>(value));
  }
  bool number_float(json::number_float_t, const json::string_t&) { return scalar(false, 0); }
  bool string(json::string_t&) { return scalar(false, 0); }
  bool binary(json::binary_t&) { return scalar(false, 0); }
  bool start_object(std::size_t) { return open(false); }
  bool start_array(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& name) {
    if (depth_ != 1) return true;
    field_ = name == "counts" ? kCounts : name == "top_k" ? kTopK : kOther;
    for (int i = 0; i < 4; ++i) {
      if (name == kKeyNames[i]) field_ = i;
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;  // read() returns false
  }

 private:
  static constexpr int kCounts = 4;
  static constexpr int kOther = 5;
  static constexpr int kTopK = 6;

  bool scalar(bool integer, std::int64_t value) {
    if (depth_ == 0) {
      object_ = false;  // the line is not an object
    } else if (depth_ == 2 && in_counts_) {
      counts_ok_ = counts_ok_ && integer && value >= 0;
      counts.push_back(value);
    } else if (depth_ == 1 && field_ == kCounts) {
      counts_ok_ = false;
    } else if (depth_ == 1 && field_ < kCounts) {
      have_[field_] = integer && value >= 0 && value <= (1 << 30);
      if (have_[field_]) keys[field_] = static_cast<int>(value);
    } else if (depth_ == 1 && field_ == kTopK) {
      top_k_ok_ = integer && value >= 1 && value <= kMaxTopK;
      top_k = top_k_ok_ ? static_cast<int>(value) : 0;
    }
    return true;
  }
  bool open(bool array) {
    if (depth_ == 0) {
      object_ = !array;
    } else if (depth_ == 1 && field_ < kCounts) {
      have_[field_] = false;
    } else if (depth_ == 1 && field_ == kTopK) {
      top_k_ok_ = false;
    } else if (depth_ == 1 && field_ == kCounts) {
      in_counts_ = array;
      counts_ok_ = array;
      counts.clear();
    } else if (depth_ == 2 && in_counts_) {
      counts_ok_ = false;  // nested inside the counts
    }
    ++depth_;
    return true;
  }
  bool close() {
    if (--depth_ == 1) in_counts_ = false;
    return true;
  }

  int* keys;
  std::vector<TokenCount>& counts;
  int& top_k;
  bool top_k_ok_ = true;  // absent, or its last value is right
  bool object_ = true;
  int depth_ = 0;
  int field_ = kOther;
  bool have_[4] = {false, false, false, false};  // the last value of each key is right
  bool counts_ok_ = false;
  bool in_counts_ = false;
};

// The fast path's reader: a cursor over the line that gives up (false) at the first thing
// outside its subset of JSON, which read_counts_line() then decides.
class FastLine {
 public:
  explicit FastLine(std::string_view line) : at_(line.data()), end_(line.data() + line.size()) {}

  void skip_space() {
    while (at_ != end_ && (*at_ == ' ' || *at_ == '\t' || *at_ == '\r')) ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ == end_ || *at_ != c) return false;
    ++at_;
    return true;
  }
  bool at_end() {
    skip_space();
    return at_ == end_;
  }
  // A key: one of the six names, no escapes. Returns its index (4: counts, 5: top_k), or -1.
  int key() {
    if (!take('"')) return -1;
    const char* const start = at_;
    while (at_ != end_ && *at_ != '"' && *at_ != '\\') ++at_;
    if (at_ == end_ || *at_ != '"') return -1;
    const std::string_view name(start, static_cast<std::size_t>(at_ - start));
    ++at_;
    for (int i = 0; i < 4; ++i) {
      if (name == kKeyNames[i]) return i;
    }
    return name == "counts" ? 4 : name == "top_k" ? 5 : -1;
  }
  // A non-negative JSON integer of at most 18 digits (no sign, no leading zero, no fraction
  // or exponent after it): what every reader reads the same way.
  bool integer(std::int64_t* value) {
    skip_space();
    const char* const start = at_;
    while (at_ != end_ && *at_ >= '0' && *at_ <= '9') ++at_;
    const std::ptrdiff_t digits = at_ - start;
    if (digits == 0 || digits > 18 || (digits > 1 && *start == '0')) return false;
    if (at_ != end_ && (*at_ == '.' || *at_ == 'e' || *at_ == 'E')) return false;
    std::int64_t v = 0;  // at most 18 digits: below 2^63
    for (const char* digit = start; digit != at_; ++digit) v = v * 10 + (*digit - '0');
    *value = v;
    return true;
  }

 private:
  const char* at_;
  const char* end_;
};

}  // namespace

bool read_counts_line_fast(std::string_view line, CountsLine* out) {
  FastLine in(line);
  if (!in.take('{')) return false;
  bool seen[6] = {false, false, false, false, false, false};
  out->counts.clear();
  out->top_k = 0;
  do {
    const int key = in.key();
    if (key < 0 || seen[key] || !in.take(':')) return false;
    seen[key] = true;
    if (key != 4) {
      std::int64_t value = 0;
      if (!in.integer(&value)) return false;
      if (key < 4 && value > (1 << 30)) return false;
      if (key == 5 && (value < 1 || value > kMaxTopK)) return false;
      (key < 4 ? out->keys[key] : out->top_k) = static_cast<int>(value);
      continue;
    }
    if (!in.take('[')) return false;
    do {
      std::int64_t count = 0;
      if (!in.integer(&count)) return false;
      out->counts.push_back(count);
    } while (in.take(','));
    if (!in.take(']')) return false;
  } while (in.take(','));
  return seen[0] && seen[1] && seen[2] && seen[3] && seen[4] && in.take('}') && in.at_end();
}

bool read_counts_line(const std::string& line, CountsLine* out) {
  return LineFields(out).read(line);
}

void read_counts_line_or_throw(const std::string& path, std::int64_t number,
                               const std::string& line, CountsLine* out) {
  if (!read_counts_line_fast(line, out) && !read_counts_line(line, out)) {
    throw_line_error(path, number, line);
  }
}

}  // namespace topoep
