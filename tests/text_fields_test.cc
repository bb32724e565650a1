// The text importers' field splitting and integer reading (traces/text_fields.h) against what
// they replace, std::getline and std::stoll, on every short string over the characters that
// matter: the readers' errors and accepted inputs must not change.

#include "traces/text_fields.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace topoep {
namespace {

// The splitting the readers did: std::getline over the line, then (CSV) an empty field after a
// trailing separator.
std::vector<std::string> getline_fields(const std::string& line, char separator,
                                        bool trailing_empty) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, separator)) fields.push_back(field);
  if (trailing_empty && !line.empty() && line.back() == separator) fields.emplace_back();
  return fields;
}

// The integer reading they did: std::stoll, all of the text used.
bool stoll_integer(const std::string& text, long long* value) {
  std::size_t used = 0;
  try {
    *value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used == text.size();
}

// Every string of up to `length` characters from `alphabet`.
std::vector<std::string> all_strings(const std::string& alphabet, int length) {
  std::vector<std::string> strings = {""};
  for (std::size_t first = 0, n = 1; n <= static_cast<std::size_t>(length); ++n) {
    const std::size_t last = strings.size();
    for (std::size_t i = first; i < last; ++i) {
      for (const char c : alphabet) strings.push_back(strings[i] + c);
    }
    first = last;
  }
  return strings;
}

TEST(TextFields, SplitGivesTheFieldsGetlineGave) {
  std::vector<std::string_view> fields;
  for (const std::string& line : all_strings("a,\t ", 6)) {
    for (const char separator : {',', '\t'}) {
      for (const bool trailing_empty : {false, true}) {
        split_fields(line, separator, trailing_empty, &fields);
        const std::vector<std::string> expected = getline_fields(line, separator, trailing_empty);
        ASSERT_EQ(std::vector<std::string>(fields.begin(), fields.end()), expected)
            << "'" << line << "' split at '" << separator << "'";
      }
    }
  }
}

TEST(TextFields, IntegersReadAsStollReadThem) {
  int accepted = 0;
  for (const std::string& text : all_strings("09+- \t\vx", 5)) {
    long long got = 0, expected = 0;
    const bool ok = read_integer(text, &got);
    ASSERT_EQ(ok, stoll_integer(text, &expected)) << "'" << text << "'";
    if (ok) {
      EXPECT_EQ(got, expected) << "'" << text << "'";
      ++accepted;
    }
  }
  EXPECT_EQ(accepted, 962);  // accepted forms were compared too, not only refusals
  for (const std::string text : {"9223372036854775807", "-9223372036854775808",
                                 "9223372036854775808", "-9223372036854775809", "+0", " +12"}) {
    long long got = 0, expected = 0;
    EXPECT_EQ(read_integer(text, &got), stoll_integer(text, &expected)) << text;
    EXPECT_EQ(got, expected) << text;
  }
}

TEST(TextFields, TrimmedIntegersDropTrailingWhiteSpaceFirst) {
  long long value = 0;
  EXPECT_TRUE(read_trimmed_integer("12\r", &value));
  EXPECT_EQ(value, 12);
  EXPECT_TRUE(read_trimmed_integer(" 7 \t", &value));
  EXPECT_EQ(value, 7);
  EXPECT_FALSE(read_integer("12\r", &value));
  EXPECT_FALSE(read_trimmed_integer(" \t", &value));
  EXPECT_FALSE(read_trimmed_integer("", &value));
  EXPECT_FALSE(read_trimmed_integer("1 2", &value));
}

}  // namespace
}  // namespace topoep
