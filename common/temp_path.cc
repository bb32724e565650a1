#include "common/temp_path.h"

#include <unistd.h>

#include <filesystem>
#include <random>

namespace topoep {

TempPath::TempPath(const std::string& prefix)
    : TempPath(prefix, std::filesystem::temp_directory_path().string()) {}

TempPath::TempPath(const std::string& prefix, const std::string& directory)
    : path_((std::filesystem::path(directory) / (prefix + "-" + std::to_string(::getpid()) + "-" +
                                                 std::to_string(std::random_device{}())))
                .string()) {}

TempPath temp_path_beside(const std::string& path, const std::string& suffix) {
  const std::filesystem::path target(path);
  std::filesystem::path directory = target.has_parent_path() ? target.parent_path() : ".";
  std::error_code ignored;
  while (!std::filesystem::is_directory(directory, ignored) && directory.has_parent_path() &&
         directory.parent_path() != directory) {
    directory = directory.parent_path();
  }
  if (!std::filesystem::is_directory(directory, ignored)) directory = ".";
  return TempPath(target.filename().string() + suffix, directory.string());
}

TempPath::~TempPath() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace topoep
