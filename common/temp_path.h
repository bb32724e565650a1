#pragma once
// A fresh path under the system's temporary directory, or a given one (not created), removed
// with everything below it when the object goes, however the work ends: for generated inputs
// (synthetic traces) and scratch files that must not outlive their use.

#include <string>

namespace topoep {

class TempPath {
 public:
  // "<temp dir>/<prefix>-<pid>-<random>".
  explicit TempPath(const std::string& prefix);
  // "<directory>/<prefix>-<pid>-<random>": for scratch files as large as the input, kept on the
  // file system the user chose for the output rather than the system's (often small) one.
  TempPath(const std::string& prefix, const std::string& directory);
  ~TempPath();
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A scratch path beside `path` (in its directory, "." if it has none): "<dir>/<name><suffix>-
// <pid>-<random>", not created. For scratch files as large as the input an importer reads, on the
// file system the user chose for the output. Where that directory does not exist yet (writing
// `path` makes it), the nearest one above it that does: nothing is made before the work ends.
TempPath temp_path_beside(const std::string& path, const std::string& suffix);

}  // namespace topoep
