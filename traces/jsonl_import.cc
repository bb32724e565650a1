// import_jsonl() (trace_import.h): JSON lines of per-rank counts, in any order, streamed.
//
// A recorder that writes one line per (step, microbatch, layer, rank) produces files far larger
// than memory over a long run (64 ranks x 256 experts x 58 layers is 1 MB of text a microbatch),
// so the importer never holds the counts. One pass parses and checks every line, keeps its key
// (32 bytes a line) and spills its counts as 32-bit integers, in the order read, to a scratch
// file beside the output (int32_spill.h); the trace is then written from the spill's memory
// map in record order, one record at a time. Parsing the text is most of the time, so it is
// parsed once.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "common/file_input_error.h"
#include "common/temp_path.h"
#include "solver/input_error.h"
#include "traces/int32_spill.h"
#include "traces/token_files.h"
#include "traces/trace_import.h"
#include "traces/trace_writer.h"

namespace topoep {

namespace {

// Where one line's counts are: its (step, microbatch, layer, rank), its row in the spill and
// the line itself. 32 bytes.
struct LineAt {
  int key[4];
  std::int64_t row;   // rows of the spill before this line's
  std::int32_t file;  // in the input's list of files
  std::int32_t line;  // 1-based, for errors

  // By key, then in reading order.
  bool operator<(const LineAt& other) const {
    return std::tie(key[0], key[1], key[2], key[3], file, line) <
           std::tie(other.key[0], other.key[1], other.key[2], other.key[3], other.file, other.line);
  }
  bool same_key(const LineAt& other) const { return std::equal(key, key + 4, other.key); }
  bool read_before(const LineAt& other) const {
    return std::tie(file, line) < std::tie(other.file, other.line);
  }
};

std::string where_line(std::int64_t line) { return "line " + std::to_string(line); }

const char* const kKeyNames[4] = {"step", "microbatch", "layer", "rank"};

// Parses one line with the JSON document model and throws the FileInputError naming the first
// field that is wrong, in the order the fields are listed: what a line that read_line() could
// not take gets, so that the errors do not depend on the fast path.
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

  int keys[4] = {0, 0, 0, 0};  // step, microbatch, layer, rank
  std::vector<TokenCount> counts;

  // Parses `line`; whether every field is there and right.
  bool read(const std::string& line) {
    object_ = true;
    depth_ = 0;
    field_ = kOther;
    std::fill(have_, have_ + 4, false);
    counts_ok_ = false;
    in_counts_ = false;
    counts.clear();  // keeps its capacity from line to line
    return json::sax_parse(line, this) && object_ && have_[0] && have_[1] && have_[2] && have_[3] &&
           counts_ok_ && !counts.empty();
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
    field_ = name == "counts" ? kCounts : kOther;
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
    }
    return true;
  }
  bool open(bool array) {
    if (depth_ == 0) {
      object_ = !array;
    } else if (depth_ == 1 && field_ < kCounts) {
      have_[field_] = false;
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

  bool object_ = true;
  int depth_ = 0;
  int field_ = kOther;
  bool have_[4] = {false, false, false, false};  // the last value of each key is right
  bool counts_ok_ = false;
  bool in_counts_ = false;
};

// Reads one line's fields; throws the FileInputError naming the first one that is wrong.
void read_line(const std::string& path, std::int64_t number, const std::string& line,
               LineFields* fields) {
  if (!fields->read(line)) throw_line_error(path, number, line);
}

// Whether `line` holds nothing but blanks (skipped, as a trailing newline's empty line is).
bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

// Parses and checks every line of `files`, in order, appends its counts to `spill`
// ([lines][experts], in the order read) and returns where each is, sorted by record then rank.
// `experts` is every line's number of counts. `input` names the whole input in errors that
// are no one file's.
std::vector<LineAt> spill_lines(const std::string& input, const std::vector<std::string>& files,
                                Int32Spill* spill, int* experts) {
  std::vector<LineAt> lines;
  std::vector<std::int32_t> row;
  *experts = -1;
  std::string first_file;  // the file that set `experts`
  std::string line;
  LineFields fields;
  for (std::size_t file = 0; file < files.size(); ++file) {
    const std::string& path = files[file];
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FileInputError(path, "", "cannot open the file for reading");
    for (std::int32_t number = 1; std::getline(in, line); ++number) {
      if (number == INT32_MAX) throw FileInputError(path, "", "has more than 2^31 lines");
      if (blank(line)) continue;
      read_line(path, number, line, &fields);
      const int size = static_cast<int>(fields.counts.size());
      if (*experts < 0) {
        *experts = size;
        first_file = path;
      }
      if (size != *experts) {
        throw FileInputError(path, where_line(number) + " counts",
                             "has " + std::to_string(size) + " experts, earlier lines " +
                                 std::to_string(*experts) +
                                 (first_file == path ? "" : " (from " + first_file + ")"));
      }
      row.clear();
      for (const TokenCount count : fields.counts) {
        // The trace stores these counts as I32 (no tokens_per_rank bounds them).
        if (count > INT32_MAX) {
          throw FileInputError(
              path, where_line(number) + " counts",
              "holds " + std::to_string(count) + ", beyond the trace's 32-bit counts");
        }
        row.push_back(static_cast<std::int32_t>(count));
      }
      spill->add(row.data(), row.size());
      const std::int64_t index = static_cast<std::int64_t>(lines.size());
      lines.push_back(LineAt{{fields.keys[0], fields.keys[1], fields.keys[2], fields.keys[3]},
                             index,
                             static_cast<std::int32_t>(file),
                             number});
    }
  }
  if (lines.empty()) throw FileInputError(input, "", "holds no records");
  std::sort(lines.begin(), lines.end());
  // Of the lines that repeat a key, the first read that does (sorting puts each key's lines in
  // reading order), named with where the key was first given.
  const LineAt* repeat = nullptr;
  const LineAt* first = nullptr;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (!lines[i].same_key(lines[i - 1])) continue;
    if (repeat == nullptr || lines[i].read_before(*repeat)) {
      repeat = &lines[i];
      first = &lines[i - 1];
      while (first != lines.data() && first[-1].same_key(*repeat)) --first;
    }
  }
  if (repeat != nullptr) {
    const std::string& first_path = files[first->file];
    throw FileInputError(files[repeat->file], where_line(repeat->line),
                         "repeats step " + std::to_string(repeat->key[0]) + ", microbatch " +
                             std::to_string(repeat->key[1]) + ", layer " +
                             std::to_string(repeat->key[2]) + ", rank " +
                             std::to_string(repeat->key[3]) + " (first given " +
                             (first->file == repeat->file ? "" : "in " + first_path + " ") + "on " +
                             where_line(first->line) + ")");
  }
  return lines;
}

// Throws naming the first (step, microbatch, layer, rank) of the ranges `shape` that no line
// gives. `lines` holds distinct keys within those ranges, sorted, and fewer than the ranges.
void throw_first_missing(const std::string& path, const std::vector<LineAt>& lines,
                         const int shape[4]) {
  std::size_t next = 0;
  int key[4] = {0, 0, 0, 0};
  while (next < lines.size() && std::equal(key, key + 4, lines[next].key)) {
    ++next;
    for (int i = 3; i >= 0; --i) {  // the next key in record order
      if (++key[i] < shape[i]) break;
      key[i] = 0;
    }
  }
  throw FileInputError(path, "",
                       "has no line for step " + std::to_string(key[0]) + ", microbatch " +
                           std::to_string(key[1]) + ", layer " + std::to_string(key[2]) +
                           ", rank " + std::to_string(key[3]));
}

}  // namespace

std::int64_t import_jsonl(const std::string& path, int top_k, int gpus_per_node,
                          const std::string& out) {
  require_at_least(top_k, 1, "top_k");
  require_at_least(gpus_per_node, 1, "gpus_per_node");
  // A directory: its *.jsonl files, in natural name order (one a rank, say), as one input.
  const std::vector<std::string> files = std::filesystem::is_directory(path)
                                             ? files_in_natural_order(path, ".jsonl")
                                             : std::vector<std::string>{path};
  if (files.empty()) throw FileInputError(path, "", "holds no .jsonl files");
  const TempPath scratch = temp_path_beside(out, ".counts");
  Int32Spill spill(scratch.path());
  int experts = -1;
  const std::vector<LineAt> lines = spill_lines(path, files, &spill, &experts);
  int shape[4] = {0, 0, 0, 0};  // steps, microbatches, layers, ranks: one past each largest key
  for (const LineAt& at : lines) {
    for (int i = 0; i < 4; ++i) shape[i] = std::max(shape[i], at.key[i] + 1);
  }
  // The lines are distinct keys within the ranges: as many as the ranges hold, or some missing.
  // (Multiplied with a stop, since four keys up to 2^30 overflow 64 bits.)
  std::int64_t expected = 1;
  for (int i = 0; i < 4 && expected <= static_cast<std::int64_t>(lines.size()); ++i) {
    expected *= shape[i];
  }
  if (expected != static_cast<std::int64_t>(lines.size())) throw_first_missing(path, lines, shape);

  TraceMetadata m;
  m.model = "jsonl";
  m.num_experts = experts;
  m.top_k = top_k;
  m.num_ranks = shape[3];
  m.gpus_per_node = gpus_per_node;
  m.num_layers = shape[2];
  m.microbatches = shape[1];
  m.steps = shape[0];
  m.tokens_per_rank = 0;  // not declared: rows are taken as recorded
  m.source = "JSON lines: " + path;
  m.packing = {{"method", "recorded per rank"}};
  TraceWriter writer(out, m);

  // The sorted keys are the record order, rank after rank.
  const std::int32_t* const rows = spill.map();
  std::vector<TokenCount> values(static_cast<std::size_t>(m.num_ranks) * experts);
  for (const LineAt& at : lines) {
    const std::int32_t* const row = rows + at.row * experts;
    std::copy(row, row + experts,
              values.begin() + static_cast<std::ptrdiff_t>(at.key[3]) * experts);
    if (at.key[3] + 1 == m.num_ranks) writer.add(RoutingCounts(m.num_ranks, experts, values));
  }
  writer.finish();
  return m.num_records();
}

}  // namespace topoep
