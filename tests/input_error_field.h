#pragma once
// Runs `action` and returns the field named by the InputError it throws, or "<no error>".

#include <functional>
#include <string>

#include "solver/input_error.h"

namespace topoep::testing {

inline std::string input_error_field(const std::function<void()>& action) {
  try {
    action();
  } catch (const InputError& error) {
    return error.field();
  }
  return "<no error>";
}

}  // namespace topoep::testing
