#include "tools/cli/table.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace topoep {

TextTable::TextTable(std::vector<std::string> header) { rows_.push_back(std::move(header)); }

void TextTable::add_row(std::vector<std::string> row) {
  if (row.size() != rows_[0].size()) {
    throw std::invalid_argument("table row has " + std::to_string(row.size()) +
                                " cells, the header " + std::to_string(rows_[0].size()));
  }
  rows_.push_back(std::move(row));
}

void TextTable::print(std::ostream& out) const {
  std::vector<std::size_t> widths(rows_[0].size(), 0);
  for (const auto& row : rows_) {
    for (std::size_t column = 0; column < row.size(); ++column) {
      widths[column] = std::max(widths[column], row[column].size());
    }
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (std::size_t column = 0; column < row.size(); ++column) {
      if (column > 0) line += "  ";
      line += row[column] + std::string(widths[column] - row[column].size(), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << '\n';
  };
  print_row(rows_[0]);
  std::vector<std::string> rule;
  for (std::size_t width : widths) rule.emplace_back(width, '-');
  print_row(rule);
  for (std::size_t i = 1; i < rows_.size(); ++i) print_row(rows_[i]);
}

std::string format_fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

}  // namespace topoep
