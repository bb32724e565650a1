#pragma once
// The bytes of an importer's input read so far, as a progress bar on a terminal
// (common/progress.h): a large recording is read for minutes before a record is written.

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "common/progress.h"

namespace topoep {

// The size of `path` in bytes; 0 when it cannot be read, which its reader then reports.
inline std::int64_t file_bytes(const std::string& path) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<std::int64_t>(size);
}

class ReadProgress {
 public:
  explicit ReadProgress(const std::vector<std::string>& files)
      : bar_("MB", total_bytes(files), 1000000) {}

  // `bytes` more of the input read.
  void advance(std::int64_t bytes) {
    done_ += bytes;
    bar_.update(done_);
  }
  // All of `file` read.
  void file_read(const std::string& file) { advance(file_bytes(file)); }

 private:
  static std::int64_t total_bytes(const std::vector<std::string>& files) {
    std::int64_t total = 0;
    for (const std::string& file : files) total += file_bytes(file);
    return total;
  }

  ProgressBar bar_;
  std::int64_t done_ = 0;
};

}  // namespace topoep
