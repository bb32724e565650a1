// import_jsonl() (trace_import.h): JSON lines of per-rank counts, in any order, streamed.
//
// A recorder that writes one line per (step, microbatch, layer, rank) produces files far larger
// than memory over a long run (64 ranks x 256 experts x 58 layers is 1 MB of text a microbatch),
// so the importer never holds the counts. One pass parses (jsonl_line.h) and checks every
// line, keeps its key (32 bytes a line) and spills its counts as 32-bit integers, in the order
// read, to a scratch file beside the output (int32_spill.h); the trace is then written from
// the spill's memory map in record order, one record at a time. Parsing the text is most of
// the time, so it is parsed once.

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
#include "traces/jsonl_line.h"
#include "traces/read_progress.h"
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
  CountsLine fields;
  ReadProgress progress(files);
  for (std::size_t file = 0; file < files.size(); ++file) {
    const std::string& path = files[file];
    std::ifstream in(path, std::ios::binary);
    if (!in) throw FileInputError(path, "", "cannot open the file for reading");
    for (std::int32_t number = 1; std::getline(in, line); ++number) {
      progress.advance(static_cast<std::int64_t>(line.size()) + 1);
      if (number == INT32_MAX) throw FileInputError(path, "", "has more than 2^31 lines");
      if (blank(line)) continue;
      read_counts_line_or_throw(path, number, line, &fields);
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
