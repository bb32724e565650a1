#pragma once
// Configuration checks name options as the library spells them (weight_overlap_fraction); a
// command line user typed a flag (--weight-overlap). A command (topoep's, the harness's) runs
// its work through naming_flags() so that such an error names the flag instead.

#include <algorithm>
#include <functional>
#include <map>
#include <string>

#include "solver/input_error.h"

namespace topoep {

// Runs `work`; an InputError whose field `flags` maps (field -> flag) is thrown again naming
// the flag, with the same message. Other errors pass through unchanged.
inline void naming_flags(const std::map<std::string, std::string>& flags,
                         const std::function<void()>& work) {
  try {
    work();
  } catch (const InputError& error) {
    const auto flag = flags.find(error.field());
    if (flag == flags.end()) throw;
    const std::string what = error.what();
    throw InputError(flag->second, what.substr(std::min(what.size(), error.field().size() + 2)));
  }
}

}  // namespace topoep
