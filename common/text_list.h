#pragma once
// Lists of names in messages: "topoep, eplb, static".

#include <string>
#include <vector>

namespace topoep {

// `names` in order, separated by `separator` (", " by default); empty for no names.
inline std::string join_names(const std::vector<std::string>& names,
                              const std::string& separator = ", ") {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : separator) + name;
  return text;
}

// `numbers` in order, separated by `separator` (", " by default): "15, 15, 14, 14".
template <typename Number>
std::string join_numbers(const std::vector<Number>& numbers, const std::string& separator = ", ") {
  std::string text;
  for (const Number number : numbers) {
    text += (text.empty() ? "" : separator) + std::to_string(number);
  }
  return text;
}

// Whether `names` lists `name`.
inline bool is_listed(const std::vector<std::string>& names, const std::string& name) {
  for (const std::string& listed : names) {
    if (listed == name) return true;
  }
  return false;
}

// `names` as a sentence lists them: "a", "a and b", "a, b and c"; empty for no names.
inline std::string spoken_list(const std::vector<std::string>& names) {
  if (names.size() < 2) return join_names(names);
  const std::vector<std::string> head(names.begin(), names.end() - 1);
  return join_names(head) + " and " + names.back();
}

// What to pass instead of a preset that does not fit: "; presets with WHAT: a, b", or, where
// none fits, "; no preset has WHAT: pass a file (SHOW gives one to edit)", SHOW being the
// command that prints the one that did not fit (show_command(), common/preset_source.h).
inline std::string preset_hint(const std::vector<std::string>& presets, const std::string& what,
                               const std::string& show) {
  if (presets.empty())
    return "; no preset has " + what + ": pass a file (" + show + " gives one to edit)";
  return "; presets with " + what + ": " + join_names(presets);
}

}  // namespace topoep
