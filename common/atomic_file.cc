#include "common/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <random>

#include "common/file_input_error.h"

namespace topoep {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::random_device device;
  temp_path_ = path_ + ".tmp-" + std::to_string(device());
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr) throw FileInputError(path_, "", "cannot be written");
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove(temp_path_.c_str());
  }
}

void AtomicFile::write(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) failed_ = true;
}

void AtomicFile::commit() {
  const bool flushed = std::fflush(file_) == 0 && fsync(fileno(file_)) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (failed_ || !flushed || !closed || std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    std::remove(temp_path_.c_str());
    throw FileInputError(path_, "", "writing failed (disk full or not writable?)");
  }
}

}  // namespace topoep
