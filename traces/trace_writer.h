#pragma once
// Writes a trace (traces/trace_format.h) record by record with bounded memory: one chunk is
// buffered at a time. Atomic: everything goes to a temporary directory beside the target, which
// finish() renames into place; a writer destroyed unfinished leaves nothing behind. Asked to,
// it draws the records written as a progress bar on stderr when that is a terminal
// (common/progress.h).

#include <optional>
#include <string>
#include <vector>

#include "common/progress.h"
#include "traces/trace_format.h"

namespace topoep {

class TraceWriter {
 public:
  // Throws InputError for inconsistent metadata, FileInputError if `path` exists, and a
  // filesystem error if the temporary directory cannot be made. Picks dtype and
  // records_per_chunk when unset.
  TraceWriter(std::string path, TraceMetadata metadata,
              ProgressDisplay progress = ProgressDisplay::kNone);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Appends the next record (records run step, microbatch, layer). Throws InputError for a
  // shape that disagrees with the metadata, a count beyond the dtype, more records than the
  // metadata declares, or a row whose sum disagrees with tokens_per_rank x top_k when declared.
  void add(const RoutingCounts& counts);
  // Writes the last chunk and the index, then renames into place. Throws InputError if fewer
  // records than declared were added.
  void finish();
  const TraceMetadata& metadata() const { return metadata_; }

 private:
  void flush_chunk();

  std::string path_;
  std::string temp_path_;
  TraceMetadata metadata_;
  std::int64_t records_added_ = 0;
  std::vector<std::uint8_t> chunk_counts_;  // little-endian counts of the buffered records
  std::vector<std::int32_t> chunk_ids_;     // [n][3]
  int chunk_records_ = 0;
  nlohmann::json chunks_ = nlohmann::json::array();
  bool finished_ = false;
  std::optional<ProgressBar> progress_;  // set once the metadata is checked, when asked for
};

}  // namespace topoep
