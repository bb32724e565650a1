#pragma once
// Streams a trace (traces/trace_format.h) record by record, one chunk in memory at a time, and
// validates everything it reads: errors are FileInputError naming the file and the record.

#include <string>
#include <vector>

#include "common/progress.h"
#include "traces/safetensors.h"
#include "traces/trace_format.h"

namespace topoep {

class TraceReader {
 public:
  // Reads and checks index.json. Throws FileInputError naming the file and field.
  explicit TraceReader(std::string path);

  const TraceMetadata& metadata() const { return metadata_; }
  const std::string& path() const { return path_; }
  // The next record, or false after the last. Checks the chunk's header, its size against the
  // file (truncation), shapes against the metadata, record ids in order, and row sums when the
  // metadata declares tokens_per_rank. The record's counts buffer is refilled (no allocation
  // when it held a record of this trace).
  bool next(TraceRecord& record);

 private:
  void load_chunk(std::size_t index);

  std::string path_;
  TraceMetadata metadata_;
  struct Chunk {
    std::string file;
    std::int64_t first_record = 0;
    std::int64_t num_records = 0;
  };
  std::vector<Chunk> chunks_;
  std::size_t chunk_index_ = 0;
  std::int64_t in_chunk_ = 0;
  std::int64_t next_record_ = 0;
  std::vector<std::uint8_t> counts_;
  std::vector<std::int32_t> ids_;
};

// Reads the whole trace, checking every record; returns the record count. `progress` draws the
// records read (common/progress.h).
std::int64_t validate_trace(const std::string& path,
                            ProgressDisplay progress = ProgressDisplay::kNone);

}  // namespace topoep
