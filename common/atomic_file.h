#pragma once
// A file that appears whole or not at all: written to a temporary name beside its target,
// flushed to disk (fsync) and renamed into place by commit(). Destroyed uncommitted (an error
// on the way), it removes the temporary and leaves any existing file untouched.
//
// The outputs of one run are committed together (commit_all()): every one is flushed and synced
// before any is renamed, so a write that fails (a full disk) leaves none of them in place.

#include <cstdio>
#include <initializer_list>
#include <string>

namespace topoep {

class AtomicFile {
 public:
  // Throws FileInputError naming `path` if it is a directory or the temporary cannot be
  // created: before any work is done, not when it is to be saved.
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const std::string& text);
  // Flushes, syncs and renames into place. Throws FileInputError on any I/O failure.
  void commit();
  const std::string& path() const { return path_; }

 private:
  friend void commit_all(std::initializer_list<AtomicFile*> files);
  // Flushes, syncs and closes the temporary; false on any failure.
  bool close_temporary();

  std::string path_;
  std::string temp_path_;
  std::FILE* file_ = nullptr;
  bool failed_ = false;
  bool placed_ = false;  // renamed into place
};

// Commits `files` (null entries skipped) as one: all are flushed and synced first, and only if
// every one succeeded are they renamed into place. Throws FileInputError naming the first that
// failed; then no temporary is left and no target is touched.
void commit_all(std::initializer_list<AtomicFile*> files);

}  // namespace topoep
