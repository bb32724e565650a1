// import_jsonl() (trace_import.h): JSON lines of per-rank counts, in any order, streamed.
//
// A recorder that writes one line per (step, microbatch, layer, rank) produces files far larger
// than memory over a long run (64 ranks x 256 experts x 58 layers is 1 MB of text a microbatch),
// so the importer holds neither the counts nor an index of the lines. One pass parses
// (jsonl_line.h) and checks every line and spills its key, where it was read and its counts as
// 32-bit integers, in the order read, to a scratch file beside the output (int32_spill.h). A
// second pass, over the spill, puts each line's number in a table of the records' (step,
// microbatch, layer, rank) slots, in another scratch file (scratch_table.h), and finds a
// repeated key there. The trace is then written in record order, from the table and the spill.
// Parsing the text is most of the time, so it is parsed once.

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
#include "traces/scratch_table.h"
#include "traces/token_files.h"
#include "traces/trace_import.h"
#include "traces/trace_writer.h"

namespace topoep {

namespace {

// What the spill holds for each line, before its counts: its (step, microbatch, layer, rank),
// then where it was read (the file's index in the input's list, the 1-based line number).
constexpr int kLineHeader = 6;

// A line's key and its place in the spill, for the sort that names an error of a recording
// whose keys do not fill their ranges (only then: a valid recording needs no sort).
struct LineAt {
  int key[4];
  std::int64_t row;  // lines of the spill before this one
  std::int32_t file;
  std::int32_t line;

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

// What the first pass found: how many lines, how many counts each, and one past each largest
// key (steps, microbatches, layers, ranks).
struct SpilledLines {
  std::int64_t lines = 0;
  int experts = -1;
  int shape[4] = {0, 0, 0, 0};
  int top_k = 0;            // what the lines that give a top_k give, 0 where none does
  std::string top_k_where;  // the first of them: "FILE line N"
};

// Parses and checks every line of `files`, in order, and appends each to `spill`: its key,
// where it was read (kLineHeader integers), then its counts. `input` names the whole input in
// errors that are no one file's.
SpilledLines spill_lines(const std::string& input, const std::vector<std::string>& files,
                         Int32Spill* spill) {
  SpilledLines read;
  std::vector<std::int32_t> row;
  std::string first_file;  // the file that set read.experts
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
      if (read.experts < 0) {
        read.experts = size;
        first_file = path;
      }
      if (size != read.experts) {
        throw FileInputError(path, where_line(number) + " counts",
                             "has " + std::to_string(size) + " experts, earlier lines " +
                                 std::to_string(read.experts) +
                                 (first_file == path ? "" : " (from " + first_file + ")"));
      }
      if (fields.top_k != 0 && read.top_k == 0) {
        read.top_k = fields.top_k;
        read.top_k_where = path + " " + where_line(number);
      } else if (fields.top_k != 0 && fields.top_k != read.top_k) {
        throw FileInputError(path, where_line(number) + " top_k",
                             "is " + std::to_string(fields.top_k) + " where " + read.top_k_where +
                                 "'s is " + std::to_string(read.top_k) +
                                 ": a recording has one top-k");
      }
      row.assign(fields.keys, fields.keys + 4);
      row.push_back(static_cast<std::int32_t>(file));
      row.push_back(number);
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
      for (int i = 0; i < 4; ++i) read.shape[i] = std::max(read.shape[i], fields.keys[i] + 1);
      ++read.lines;
    }
  }
  if (read.lines == 0) throw FileInputError(input, "", "holds no records");
  return read;
}

// The spilled line `row` of a spill of `stride` integers a line, as its key and place.
LineAt line_at(const std::int32_t* rows, std::size_t stride, std::int64_t row) {
  const std::int32_t* const header = rows + static_cast<std::size_t>(row) * stride;
  return LineAt{{header[0], header[1], header[2], header[3]}, row, header[4], header[5]};
}

// Throws naming `repeat`, a line that repeats the key of `first`, read before it.
[[noreturn]] void throw_repeat(const std::vector<std::string>& files, const LineAt& repeat,
                               const LineAt& first) {
  throw FileInputError(files[repeat.file], where_line(repeat.line),
                       "repeats step " + std::to_string(repeat.key[0]) + ", microbatch " +
                           std::to_string(repeat.key[1]) + ", layer " +
                           std::to_string(repeat.key[2]) + ", rank " +
                           std::to_string(repeat.key[3]) + " (first given " +
                           (first.file == repeat.file ? "" : "in " + files[first.file] + " ") +
                           "on " + where_line(first.line) + ")");
}

// For a recording whose lines are not as many as their keys' ranges hold: throws naming the
// first line read that repeats a key, else the first (step, microbatch, layer, rank) of the
// ranges that no line gives. Sorts an index of the lines (32 bytes each): only an input in
// error pays for it.
[[noreturn]] void throw_repeat_or_missing(const std::string& input,
                                          const std::vector<std::string>& files,
                                          const std::int32_t* rows, std::size_t stride,
                                          const SpilledLines& read) {
  std::vector<LineAt> lines;
  lines.reserve(static_cast<std::size_t>(read.lines));
  for (std::int64_t row = 0; row < read.lines; ++row) lines.push_back(line_at(rows, stride, row));
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
  if (repeat != nullptr) throw_repeat(files, *repeat, *first);
  // Distinct keys within the ranges, fewer than the ranges hold: the first key in record order
  // that no line has.
  std::size_t next = 0;
  int key[4] = {0, 0, 0, 0};
  while (next < lines.size() && std::equal(key, key + 4, lines[next].key)) {
    ++next;
    for (int i = 3; i >= 0; --i) {  // the next key in record order
      if (++key[i] < read.shape[i]) break;
      key[i] = 0;
    }
  }
  throw FileInputError(input, "",
                       "has no line for step " + std::to_string(key[0]) + ", microbatch " +
                           std::to_string(key[1]) + ", layer " + std::to_string(key[2]) +
                           ", rank " + std::to_string(key[3]));
}

}  // namespace

std::int64_t import_jsonl(const std::string& path, int top_k, int gpus_per_node,
                          const std::string& out, const TopKForExperts& top_k_for) {
  require_at_least(top_k, 0, "top_k");
  require_at_least(gpus_per_node, 1, "gpus_per_node");
  // A directory: its *.jsonl files, in natural name order (one a rank, say), as one input.
  const std::vector<std::string> files = std::filesystem::is_directory(path)
                                             ? files_in_natural_order(path, ".jsonl")
                                             : std::vector<std::string>{path};
  if (files.empty()) throw FileInputError(path, "", "holds no .jsonl files");
  const TempPath scratch = temp_path_beside(out, ".counts");
  Int32Spill spill(scratch.path());
  const SpilledLines read = spill_lines(path, files, &spill);
  const int experts = read.experts;
  const std::int32_t* const rows = spill.map();
  const std::size_t stride = static_cast<std::size_t>(kLineHeader + experts);
  // The keys' ranges hold as many slots as there are lines, or some key is repeated or
  // missing. (Multiplied with a stop, since four keys up to 2^30 overflow 64 bits.)
  std::int64_t expected = 1;
  for (int i = 0; i < 4 && expected <= read.lines; ++i) expected *= read.shape[i];
  if (expected != read.lines) throw_repeat_or_missing(path, files, rows, stride, read);

  // Each record slot's line number plus one (0: no line yet), filled in reading order: the
  // first line to find its slot taken is the first read that repeats a key. As many lines as
  // slots and none repeated: every slot has its line.
  const int* const shape = read.shape;
  const TempPath order_path = temp_path_beside(out, ".order");
  ScratchTable order(order_path.path(), static_cast<std::size_t>(read.lines));
  std::int64_t* const slot_line = order.data();
  for (std::int64_t row = 0; row < read.lines; ++row) {
    const std::int32_t* const key = rows + static_cast<std::size_t>(row) * stride;
    const std::int64_t slot =
        ((static_cast<std::int64_t>(key[0]) * shape[1] + key[1]) * shape[2] + key[2]) * shape[3] +
        key[3];
    if (slot_line[slot] != 0) {
      throw_repeat(files, line_at(rows, stride, row), line_at(rows, stride, slot_line[slot] - 1));
    }
    slot_line[slot] = row + 1;
  }

  TraceMetadata m;
  m.model = "jsonl";
  m.num_experts = experts;
  // The lines' own top_k (the recorder writes it) wins over asking; a given one must agree.
  if (top_k != 0 && read.top_k != 0 && top_k != read.top_k) {
    throw InputError("top_k", "is " + std::to_string(top_k) + ", but " + read.top_k_where +
                                  " records top_k " + std::to_string(read.top_k));
  }
  m.top_k =
      resolve_top_k(top_k != 0 ? top_k : read.top_k, experts, top_k_for, "a JSON lines recording");
  m.num_ranks = shape[3];
  m.gpus_per_node = gpus_per_node;
  m.num_layers = shape[2];
  m.microbatches = shape[1];
  m.steps = shape[0];
  m.tokens_per_rank = 0;  // not declared: rows are taken as recorded
  m.source = "JSON lines: " + path;
  m.packing = {{"method", "recorded per rank"}};
  TraceWriter writer(out, m, ProgressDisplay::kTerminal);

  // Slots run in record order, rank after rank.
  std::vector<TokenCount> values(static_cast<std::size_t>(m.num_ranks) * experts);
  for (std::int64_t slot = 0; slot < read.lines; ++slot) {
    const std::int32_t* const counts =
        rows + static_cast<std::size_t>(slot_line[slot] - 1) * stride + kLineHeader;
    const int rank = static_cast<int>(slot % m.num_ranks);
    std::copy(counts, counts + experts,
              values.begin() + static_cast<std::ptrdiff_t>(rank) * experts);
    if (rank + 1 == m.num_ranks) writer.add(RoutingCounts(m.num_ranks, experts, values));
  }
  writer.finish();
  return m.num_records();
}

}  // namespace topoep
