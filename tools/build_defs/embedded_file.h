#pragma once
// A text file compiled into a binary (see embed.bzl), so presets work without runfiles.

#include <string_view>

namespace topoep {

struct EmbeddedFile {
  std::string_view name;  // file name without directory and extension
  std::string_view text;  // the file's bytes
};

}  // namespace topoep
