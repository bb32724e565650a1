#pragma once

namespace topoep {

constexpr const char* kVersion = "0.1.0";

}  // namespace topoep
