#include "common/preset_source.h"

#include <algorithm>
#include <fstream>

#include "common/json_fields.h"
#include "common/text_list.h"

namespace topoep {

std::vector<std::string> preset_names(const std::vector<EmbeddedFile>& presets) {
  std::vector<std::string> names;
  for (const EmbeddedFile& file : presets) names.emplace_back(file.name);
  std::sort(names.begin(), names.end());
  return names;
}

PresetSource resolve_preset_or_file(const std::vector<EmbeddedFile>& presets,
                                    const std::string& preset_or_path, const std::string& kind) {
  if (std::ifstream(preset_or_path).good()) {
    return PresetSource{read_text_file(preset_or_path), preset_or_path};
  }
  for (const EmbeddedFile& file : presets) {
    if (file.name == preset_or_path) {
      return PresetSource{std::string(file.text), "preset:" + preset_or_path};
    }
  }
  throw FileInputError(preset_or_path, "",
                       "no such file, and not a " + kind +
                           " preset (presets: " + join_names(preset_names(presets)) + ")");
}

namespace {

// Whether `origin` (PresetSource::origin) is a file's path rather than "preset:NAME".
bool is_file_origin(const std::string& origin) {
  return !origin.empty() && origin.rfind("preset:", 0) != 0;
}

}  // namespace

std::string quoted_with_origin(const std::string& name, const std::string& origin) {
  return "'" + name + "'" + (is_file_origin(origin) ? " (" + origin + ")" : "");
}

std::string show_command(const std::string& kind, const std::string& name,
                         const std::string& origin) {
  return "topoep " + kind + " show " + (is_file_origin(origin) ? origin : name) + " --json";
}

}  // namespace topoep
