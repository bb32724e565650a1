#pragma once
// The error the solver layer throws for inputs that break a documented precondition.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace topoep {

// Thrown for bad shapes, out-of-range ids, negative counts and similar caller mistakes.
// `field()` names the offending input (e.g. "counts[3][17]"); what() is a full sentence.
class InputError : public std::invalid_argument {
 public:
  InputError(std::string field, const std::string& message)
      : std::invalid_argument(field + ": " + message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// Throws InputError(field, "must be at least LOW (got VALUE)") when value < low.
inline void require_at_least(std::int64_t value, std::int64_t low, const std::string& field) {
  if (value < low) {
    throw InputError(
        field, "must be at least " + std::to_string(low) + " (got " + std::to_string(value) + ")");
  }
}

}  // namespace topoep
