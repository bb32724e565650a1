#include "common/atomic_file.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "common/file_input_error.h"

namespace topoep {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  // rename() onto a directory fails only at the end, after the run's work.
  if (std::filesystem::is_directory(path_)) {
    throw FileInputError(path_, "", "is a directory, not a file to write");
  }
  std::random_device device;
  temp_path_ = path_ + ".tmp-" + std::to_string(device());
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (file_ == nullptr) throw FileInputError(path_, "", "cannot be written");
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!placed_) std::remove(temp_path_.c_str());
}

void AtomicFile::write(const std::string& text) {
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) failed_ = true;
}

bool AtomicFile::close_temporary() {
  const bool flushed = std::fflush(file_) == 0 && fsync(fileno(file_)) == 0;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  return !failed_ && flushed && closed;
}

void AtomicFile::commit() { commit_all({this}); }

void commit_all(std::initializer_list<AtomicFile*> files) {
  for (AtomicFile* file : files) {
    // The destructors remove every temporary: nothing was renamed yet.
    if (file != nullptr && !file->close_temporary()) {
      throw FileInputError(file->path_, "", "writing failed (disk full or not writable?)");
    }
  }
  for (AtomicFile* file : files) {
    if (file == nullptr) continue;
    if (std::rename(file->temp_path_.c_str(), file->path_.c_str()) != 0) {
      throw FileInputError(file->path_, "", "could not be moved into place");
    }
    file->placed_ = true;
  }
}

}  // namespace topoep
