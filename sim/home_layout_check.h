#pragma once
// The refusal of experts the GPUs do not divide, as the simulator, `topoep solve` and the
// harness word it: with the uneven layout that would take them (HomeLayout::kUneven,
// solver/placement.h) and the flag that asks for it.

#include <string>

#include "solver/input_error.h"
#include "solver/placement.h"

namespace topoep {

// The help of every command's --uneven-homes.
inline constexpr const char* kUnevenHomesHelp =
    "Where the GPUs do not divide the experts, home one expert more on the first E mod R GPUs "
    "(vLLM's layout; ranks beyond E home none) instead of refusing";

// Throws InputError(field, experts_lead + " do not divide evenly over the R GPUs" + of_gpus +
// what uneven homes would do) where `homes` is kEven and `gpus` (>= 1) do not divide `experts`.
// `experts_lead` says whose experts ("the trace's 256 experts"), `of_gpus` whose GPUs (" of
// 'gb200-nvl72-2x72'", or empty). E.g. "...: uneven homes (--uneven-homes; in a sweep,
// "uneven_homes": [true]) would home 2 experts on the first 112 GPUs and 1 on the others".
inline void require_homes_fit(HomeLayout homes, int experts, int gpus, const std::string& field,
                              const std::string& experts_lead, const std::string& of_gpus) {
  if (homes == HomeLayout::kUneven || experts % gpus == 0) return;
  const int base = experts / gpus, extra = experts % gpus;
  throw InputError(field, experts_lead + " do not divide evenly over the " + std::to_string(gpus) +
                              " GPUs" + of_gpus +
                              ": uneven homes (--uneven-homes; in a sweep, \"uneven_homes\": "
                              "[true]) would home " +
                              std::to_string(base + 1) + (base + 1 == 1 ? " expert" : " experts") +
                              " on the first " + std::to_string(extra) + " GPUs and " +
                              std::to_string(base) + " on the others");
}

}  // namespace topoep
