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

// `names` as a sentence lists them: "a", "a and b", "a, b and c" (or `conjunction`'s); empty
// for no names.
inline std::string spoken_list(const std::vector<std::string>& names,
                               const std::string& conjunction = "and") {
  if (names.size() < 2) return join_names(names);
  const std::vector<std::string> head(names.begin(), names.end() - 1);
  return join_names(head) + " " + conjunction + " " + names.back();
}

// `text` (one paragraph) broken into lines of at most `width` characters at spaces, each line
// ended by a newline; a word longer than `width` stands on a line of its own.
inline std::string wrapped(const std::string& text, std::size_t width = 88) {
  std::string out, line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    start = end + 1;
  }
  return line.empty() ? out : out + line + "\n";
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
