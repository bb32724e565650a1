#pragma once
// A file that appears whole or not at all: written to a temporary name beside its target,
// flushed to disk (fsync) and renamed into place by commit(). Destroyed uncommitted (an error
// on the way), it removes the temporary and leaves any existing file untouched.

#include <cstdio>
#include <string>

namespace topoep {

class AtomicFile {
 public:
  // Throws FileInputError naming `path` if the temporary cannot be created.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const std::string& text);
  // Flushes, syncs and renames into place. Throws FileInputError on any I/O failure.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  bool failed_ = false;
};

}  // namespace topoep
