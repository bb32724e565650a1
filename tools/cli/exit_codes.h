#pragma once
// The `topoep` command's exit codes.

namespace topoep {

constexpr int kExitOk = 0;
constexpr int kExitRuntimeError = 1;  // the input was fine but the work failed
constexpr int kExitBadInput = 2;      // bad usage, or an input file or value that is invalid

}  // namespace topoep
