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

}  // namespace topoep
