#pragma once
// Where the CLI takes "a preset name or a file path" (topologies, models), this finds the text.

#include <string>
#include <vector>

#include "tools/build_defs/embedded_file.h"

namespace topoep {

// Names of embedded presets, alphabetical.
std::vector<std::string> preset_names(const std::vector<EmbeddedFile>& presets);

struct PresetSource {
  std::string text;
  std::string origin;  // the path, or "preset:NAME": what errors name
};

// The file at `preset_or_path` if one exists, else the preset of that name. Throws
// FileInputError for an unreadable file or an unknown name (listing the `kind` presets).
PresetSource resolve_preset_or_file(const std::vector<EmbeddedFile>& presets,
                                    const std::string& preset_or_path, const std::string& kind);

// `name` quoted for an error, followed by the file it was read from when `origin` is a path
// (a copied preset keeps the preset's name, so the name alone can mislead): "'small' (m.json)".
std::string quoted_with_origin(const std::string& name, const std::string& origin);

// The command that prints a `kind` ("model", "topology") as a file to edit, from the one named
// `name` read from `origin` (its file, or the preset): "topoep model show deepseek-v3 --json".
std::string show_command(const std::string& kind, const std::string& name,
                         const std::string& origin);

}  // namespace topoep
