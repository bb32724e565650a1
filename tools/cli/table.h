#pragma once
// Aligned plain-text tables for people; machines get --json instead.

#include <ostream>
#include <string>
#include <vector>

namespace topoep {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);
  // Throws std::invalid_argument if the row's width differs from the header's.
  void add_row(std::vector<std::string> row);
  // Columns padded to their widest cell, separated by two spaces; a dashed rule under the header.
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
};

// Fixed-point text with `decimals` digits after the point, e.g. format_fixed(48.5, 1) == "48.5".
std::string format_fixed(double value, int decimals);

}  // namespace topoep
