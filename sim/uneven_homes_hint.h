#pragma once
// How the simulator's and `topoep solve`'s errors end where the GPUs do not divide the experts:
// the uneven layout that would take them (HomeLayout::kUneven, solver/placement.h).

#include <string>

namespace topoep {

// E.g. ": uneven homes (--uneven-homes; in a sweep, "uneven_homes": [true]) would home 11
// experts on the first 16 GPUs and 10 on the others". `gpus` >= 1.
inline std::string uneven_homes_hint(int experts, int gpus) {
  const int base = experts / gpus, extra = experts % gpus;
  return ": uneven homes (--uneven-homes; in a sweep, \"uneven_homes\": [true]) would home " +
         std::to_string(base + 1) + (base + 1 == 1 ? " expert" : " experts") + " on the first " +
         std::to_string(extra) + " GPUs and " + std::to_string(base) + " on the others";
}

}  // namespace topoep
