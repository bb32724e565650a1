#pragma once
// The error for bad input files: it names the file and the field, so users can fix the file.

#include <stdexcept>
#include <string>

namespace topoep {

// what() reads "<file>: field '<field>': <message>", or "<file>: <message>" when the problem
// is not one field (unreadable file, invalid JSON).
class FileInputError : public std::runtime_error {
 public:
  FileInputError(const std::string& file, const std::string& field, const std::string& message)
      : std::runtime_error(file + ": " + (field.empty() ? "" : "field '" + field + "': ") +
                           message),
        file_(file),
        field_(field) {}
  const std::string& file() const { return file_; }
  const std::string& field() const { return field_; }

 private:
  std::string file_;
  std::string field_;
};

}  // namespace topoep
