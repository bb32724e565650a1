#include "tools/cli/table.h"

#include <gtest/gtest.h>

#include <sstream>

namespace topoep {
namespace {

TEST(TextTable, PadsColumnsToTheWidestCell) {
  TextTable table({"name", "GB/s"});
  table.add_row({"h800-4x8", "160.0"});
  table.add_row({"x", "48.5"});
  std::ostringstream out;
  table.print(out);
  EXPECT_EQ(out.str(),
            "name      GB/s\n"
            "--------  -----\n"
            "h800-4x8  160.0\n"
            "x         48.5\n");
}

TEST(TextTable, RejectsRowsOfTheWrongWidth) {
  TextTable table({"a", "b"});
  EXPECT_THROW(table.add_row({"1"}), std::invalid_argument);
}

TEST(FormatFixed, RoundsToTheGivenDecimals) {
  EXPECT_EQ(format_fixed(48.5, 1), "48.5");
  EXPECT_EQ(format_fixed(2.0 / 3.0, 3), "0.667");
  EXPECT_EQ(format_fixed(3350, 0), "3350");
}

}  // namespace
}  // namespace topoep
