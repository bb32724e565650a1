#pragma once
// A fresh path under the system's temporary directory (not created), removed with everything
// below it when the object goes, however the work ends: for generated inputs (synthetic traces)
// that must not outlive their use.

#include <string>

namespace topoep {

class TempPath {
 public:
  // "<temp dir>/<prefix>-<pid>-<random>".
  explicit TempPath(const std::string& prefix);
  ~TempPath();
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace topoep
