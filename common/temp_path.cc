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

TempPath::~TempPath() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace topoep
