#include "traces/trace_reader.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "common/json_fields.h"
#include "traces/import_format_guess.h"

namespace topoep {
namespace {

// The little-endian unsigned integer at `bytes`.
template <typename Unsigned>
Unsigned read_le(const std::uint8_t* bytes) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  Unsigned value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
#else
  Unsigned value = 0;
  for (std::size_t b = 0; b < sizeof(Unsigned); ++b)
    value |= static_cast<Unsigned>(bytes[b]) << (8 * b);
  return value;
#endif
}

}  // namespace

TraceReader::TraceReader(std::string path) : path_(std::move(path)) {
  const std::string index_path = path_ + "/index.json";
  // Recorded routing data handed over as a trace is a common slip: say so, and how to import it.
  std::error_code error;
  if (!std::filesystem::exists(index_path, error)) throw_not_a_trace(path_);
  const nlohmann::json index = parse_json_text(read_text_file(index_path), index_path);
  JsonObjectReader root(index, index_path, "");
  if (root.string_field("format") != "topoep-trace")
    root.fail("format", "must be \"topoep-trace\"");
  if (root.int_field("version", 1, 1) != 1) root.fail("version", "must be 1");
  metadata_ = trace_metadata_from_json(root.raw_field("metadata"), index_path);
  const nlohmann::json& chunks = root.raw_field("chunks");
  if (!chunks.is_array()) root.fail("chunks", "must be an array");
  std::int64_t expected_first = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    JsonObjectReader chunk(chunks[i], index_path, "chunks[" + std::to_string(i) + "]");
    Chunk c{chunk.string_field("file"), chunk.int_field("first_record", 0, 1LL << 50),
            chunk.int_field("num_records", 1, 1LL << 30)};
    chunk.finish();
    if (c.file.find('/') != std::string::npos)
      chunk.fail("file", "must be a file name in the trace directory");
    if (c.first_record != expected_first) {
      chunk.fail("first_record", "is " + std::to_string(c.first_record) + ", expected " +
                                     std::to_string(expected_first));
    }
    expected_first += c.num_records;
    chunks_.push_back(c);
  }
  root.finish();
  if (expected_first != metadata_.num_records()) {
    throw FileInputError(index_path, "chunks",
                         "hold " + std::to_string(expected_first) +
                             " records, the metadata declares " +
                             std::to_string(metadata_.num_records()));
  }
}

void TraceReader::load_chunk(std::size_t index) {
  const Chunk& chunk = chunks_[index];
  const std::string file = path_ + "/" + chunk.file;
  const SafetensorsHeader header = read_safetensors_header(file);
  const auto counts = header.tensors.find("counts");
  const auto ids = header.tensors.find("records");
  if (counts == header.tensors.end()) throw FileInputError(file, "counts", "tensor is missing");
  if (ids == header.tensors.end()) throw FileInputError(file, "records", "tensor is missing");
  const std::vector<std::int64_t> counts_shape = {chunk.num_records, metadata_.num_ranks,
                                                  metadata_.num_experts};
  if (counts->second.dtype != metadata_.dtype || counts->second.shape != counts_shape) {
    throw FileInputError(
        file, "counts",
        "has dtype " + counts->second.dtype + " and another shape than the index's " +
            std::to_string(chunk.num_records) + " x " + std::to_string(metadata_.num_ranks) +
            " x " + std::to_string(metadata_.num_experts) + " " + metadata_.dtype);
  }
  if (ids->second.dtype != "I32" ||
      ids->second.shape != std::vector<std::int64_t>{chunk.num_records, 3}) {
    throw FileInputError(file, "records",
                         "must be I32 [" + std::to_string(chunk.num_records) + "][3]");
  }
  std::ifstream in(file, std::ios::binary);
  counts_.resize(static_cast<std::size_t>(counts->second.end - counts->second.begin));
  ids_.resize(static_cast<std::size_t>(chunk.num_records) * 3);
  in.seekg(header.data_start + counts->second.begin);
  in.read(reinterpret_cast<char*>(counts_.data()), static_cast<std::streamsize>(counts_.size()));
  in.seekg(header.data_start + ids->second.begin);
  in.read(reinterpret_cast<char*>(ids_.data()), static_cast<std::streamsize>(ids_.size() * 4));
  if (!in) throw FileInputError(file, "", "reading the tensors failed: the file is truncated");
  in_chunk_ = 0;
}

bool TraceReader::next(TraceRecord& record) {
  if (next_record_ >= metadata_.num_records()) return false;
  if (next_record_ == chunks_[chunk_index_].first_record) load_chunk(chunk_index_);
  const Chunk& chunk = chunks_[chunk_index_];
  // Named only when a record is rejected: most records are not.
  const auto file = [&] { return path_ + "/" + chunk.file; };
  const auto where = [&] { return "record " + std::to_string(next_record_); };
  const TraceMetadata& m = metadata_;
  const std::int64_t per_step = static_cast<std::int64_t>(m.microbatches) * m.num_layers;
  const std::int32_t* id = ids_.data() + in_chunk_ * 3;
  if (id[0] != next_record_ / per_step || id[1] != next_record_ % per_step / m.num_layers ||
      id[2] != next_record_ % m.num_layers) {
    throw FileInputError(file(), where(),
                         "is labelled step " + std::to_string(id[0]) + ", microbatch " +
                             std::to_string(id[1]) + ", layer " + std::to_string(id[2]) +
                             ": records must run step, microbatch, layer without gaps");
  }
  const std::size_t cells = static_cast<std::size_t>(m.num_ranks) * m.num_experts;
  // The record's last counts' buffer, refilled: every cell is written below.
  std::vector<TokenCount> values = std::move(record.counts).release_values();
  values.resize(cells);
  const std::size_t width = dtype_size(m.dtype);  // the metadata's check allows U16 or I32
  const std::uint8_t* bytes = counts_.data() + static_cast<std::size_t>(in_chunk_) * cells * width;
  // Little-endian on every host: a little-endian host copies each cell (one load, and the loop
  // widens several at a time), another assembles it byte by byte. Row by row, each row summed
  // in the same pass for the metadata's check; the width is tested once per record and
  // negative I32 cells found after the pass, so the loops stay branch-free.
  const int E = m.num_experts;
  bool negative = false;
  // Counts of at most 32 bits, so neither a row's sum nor their total can overflow.
  TokenCount total = 0;
  std::vector<TokenCount> row_sums(static_cast<std::size_t>(m.num_ranks));
  for (int src = 0; src < m.num_ranks; ++src) {
    const std::size_t first = static_cast<std::size_t>(src) * E;
    TokenCount* const row = values.data() + first;
    TokenCount sum = 0;
    if (width == 2) {
      const std::uint8_t* const in = bytes + 2 * first;
      for (int e = 0; e < E; ++e) {
        row[e] = read_le<std::uint16_t>(in + 2 * e);
        sum += row[e];
      }
    } else {
      const std::uint8_t* const in = bytes + 4 * first;
      for (int e = 0; e < E; ++e) {
        const auto value = static_cast<std::int32_t>(read_le<std::uint32_t>(in + 4 * e));
        negative |= value < 0;
        row[e] = value;
        sum += value;
      }
    }
    row_sums[static_cast<std::size_t>(src)] = sum;
    total += sum;
  }
  for (std::size_t i = 0; negative && i < cells; ++i) {
    if (values[i] < 0) {
      throw FileInputError(
          file(), where() + " counts[" + std::to_string(i / E) + "][" + std::to_string(i % E) + "]",
          "is negative (" + std::to_string(values[i]) + ")");
    }
  }
  for (int src = 0; m.tokens_per_rank > 0 && src < m.num_ranks; ++src) {
    const TokenCount row = row_sums[static_cast<std::size_t>(src)];
    if (row != m.tokens_per_rank * m.top_k) {
      throw FileInputError(file(), where() + " counts[" + std::to_string(src) + "]",
                           "sums to " + std::to_string(row) + ", the metadata declares " +
                               std::to_string(m.tokens_per_rank * m.top_k));
    }
  }
  record.step = id[0];
  record.microbatch = id[1];
  record.layer = id[2];
  record.counts = RoutingCounts::from_summed(m.num_ranks, m.num_experts, std::move(values), total);
  ++next_record_;
  if (++in_chunk_ == chunk.num_records) {
    ++chunk_index_;
    in_chunk_ = 0;
  }
  return true;
}

std::int64_t validate_trace(const std::string& path, ProgressDisplay progress) {
  TraceReader reader(path);
  ProgressBar bar("records",
                  progress == ProgressDisplay::kTerminal ? reader.metadata().num_records() : 0);
  TraceRecord record;
  std::int64_t records = 0;
  while (reader.next(record)) bar.update(++records);
  return records;
}

}  // namespace topoep
