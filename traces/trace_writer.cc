#include "traces/trace_writer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>

#include "common/file_input_error.h"
#include "solver/input_error.h"
#include "traces/safetensors.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "trace chunks are written from host memory: little-endian hosts only");

namespace topoep {
namespace {

namespace fs = std::filesystem;

std::string chunk_name(std::size_t index) {
  char name[40];
  std::snprintf(name, sizeof name, "chunk-%06zu.safetensors", index);
  return name;
}

}  // namespace

TraceWriter::TraceWriter(std::string path, TraceMetadata metadata, ProgressDisplay progress)
    : path_(std::move(path)), metadata_(std::move(metadata)) {
  TraceMetadata& m = metadata_;
  check_trace_metadata(m);
  if (m.dtype.empty())
    m.dtype = (m.tokens_per_rank > 0 && m.tokens_per_rank * m.top_k <= 65535) ? "U16" : "I32";
  if (m.records_per_chunk <= 0) {
    // About 16 MiB of counts per chunk, at least one record.
    const std::int64_t record_bytes =
        static_cast<std::int64_t>(m.num_ranks) * m.num_experts * dtype_size(m.dtype);
    m.records_per_chunk = static_cast<int>(std::max<std::int64_t>(1, (16 << 20) / record_bytes));
  }
  if (fs::exists(path_)) throw FileInputError(path_, "", "already exists: not overwriting it");
  std::random_device device;
  temp_path_ = path_ + ".tmp-" + std::to_string(device());
  fs::create_directories(temp_path_);
  // The counts alone take this much; a trace that cannot fit would run until the disk is full
  // (hours for a large one) and then be removed, having shared a full disk with everyone else.
  const double needed =
      static_cast<double>(m.num_records()) * m.num_ranks * m.num_experts * dtype_size(m.dtype);
  std::error_code unknown;
  const fs::space_info space = fs::space(temp_path_, unknown);
  if (!unknown && needed > static_cast<double>(space.available)) {
    fs::remove_all(temp_path_, unknown);
    char why[200];
    std::snprintf(why, sizeof why,
                  "the trace's %lld records need %.3g GB of counts, and %.3g GB are free there",
                  static_cast<long long>(m.num_records()), needed / 1e9,
                  static_cast<double>(space.available) / 1e9);
    throw FileInputError(path_, "", why);
  }
  if (progress == ProgressDisplay::kTerminal) progress_.emplace("records", m.num_records());
}

TraceWriter::~TraceWriter() {
  if (!finished_) {
    std::error_code ignored;
    fs::remove_all(temp_path_, ignored);
  }
}

void TraceWriter::add(const RoutingCounts& counts) {
  const TraceMetadata& m = metadata_;
  const std::string record = "record " + std::to_string(records_added_);
  if (records_added_ >= m.num_records()) {
    throw InputError(record,
                     "the metadata declares only " + std::to_string(m.num_records()) + " records");
  }
  if (counts.num_ranks() != m.num_ranks || counts.num_experts() != m.num_experts) {
    throw InputError(record, "has " + std::to_string(counts.num_ranks()) + " x " +
                                 std::to_string(counts.num_experts()) + " counts, the metadata " +
                                 std::to_string(m.num_ranks) + " x " +
                                 std::to_string(m.num_experts));
  }
  if (chunk_records_ == 0) {
    // The chunk's bytes at once: grown by doubling, its buffer would briefly hold one and a half
    // chunks, and the peak memory would follow that rather than the chunk.
    const std::int64_t records =
        std::min<std::int64_t>(m.records_per_chunk, m.num_records() - records_added_);
    chunk_counts_.reserve(
        static_cast<std::size_t>(records * m.num_ranks * m.num_experts * dtype_size(m.dtype)));
    chunk_ids_.reserve(static_cast<std::size_t>(records * 3));
  }
  const TokenCount limit = m.dtype == "U16" ? 65535 : 2147483647;
  const TokenCount expected_row = m.tokens_per_rank * m.top_k;
  for (RankId src = 0; src < m.num_ranks; ++src) {
    TokenCount row = 0;
    for (ExpertId e = 0; e < m.num_experts; ++e) {
      const TokenCount value = counts.at(src, e);
      if (value > limit) {
        throw InputError(record + " counts[" + std::to_string(src) + "][" + std::to_string(e) + "]",
                         std::to_string(value) + " does not fit in " + m.dtype);
      }
      row += value;
      if (m.dtype == "U16") {
        chunk_counts_.push_back(static_cast<std::uint8_t>(value));
        chunk_counts_.push_back(static_cast<std::uint8_t>(value >> 8));
      } else {
        for (int i = 0; i < 4; ++i)
          chunk_counts_.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
      }
    }
    if (m.tokens_per_rank > 0 && row != expected_row) {
      throw InputError(
          record + " counts[" + std::to_string(src) + "]",
          "sums to " + std::to_string(row) +
              ", the metadata declares tokens_per_rank x top_k = " + std::to_string(expected_row));
    }
  }
  const std::int64_t index = records_added_;
  const std::int64_t per_step = static_cast<std::int64_t>(m.microbatches) * m.num_layers;
  chunk_ids_.push_back(static_cast<std::int32_t>(index / per_step));
  chunk_ids_.push_back(static_cast<std::int32_t>(index % per_step / m.num_layers));
  chunk_ids_.push_back(static_cast<std::int32_t>(index % m.num_layers));
  ++records_added_;
  if (progress_) progress_->update(records_added_);
  if (++chunk_records_ == m.records_per_chunk) flush_chunk();
}

void TraceWriter::flush_chunk() {
  if (chunk_records_ == 0) return;
  const std::string name = chunk_name(chunks_.size());
  write_safetensors(temp_path_ + "/" + name,
                    {{"counts",
                      metadata_.dtype,
                      {chunk_records_, metadata_.num_ranks, metadata_.num_experts},
                      chunk_counts_.data()},
                     {"records", "I32", {chunk_records_, 3}, chunk_ids_.data()}},
                    {{"format", "topoep-trace-chunk"}});
  chunks_.push_back({{"file", name},
                     {"first_record", records_added_ - chunk_records_},
                     {"num_records", chunk_records_}});
  chunk_counts_.clear();
  chunk_ids_.clear();
  chunk_records_ = 0;
}

void TraceWriter::finish() {
  if (records_added_ != metadata_.num_records()) {
    throw InputError("records", std::to_string(records_added_) + " added, the metadata declares " +
                                    std::to_string(metadata_.num_records()));
  }
  flush_chunk();
  const nlohmann::json index = {{"format", "topoep-trace"},
                                {"version", 1},
                                {"metadata", trace_metadata_to_json(metadata_)},
                                {"chunks", chunks_}};
  {
    std::ofstream out(temp_path_ + "/index.json");
    out << index.dump(2) << "\n";
    out.flush();
    if (!out) throw std::runtime_error("writing " + temp_path_ + "/index.json failed");
  }
  fs::rename(temp_path_, path_);
  finished_ = true;
}

}  // namespace topoep
