#pragma once
// Splitting a line of text into fields and reading integers from them, without a string per
// field: the text importers' inner loop (a per-token CSV is a line a token). The rules are the
// ones std::getline and std::stoll apply, which the readers' error messages were written for.

#include <cctype>
#include <charconv>
#include <string_view>
#include <vector>

namespace topoep {

// std::isspace in the "C" locale, the one the toolkit runs in (it never calls setlocale).
inline bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// The fields of `line` between `separator`s, as std::getline over it would give them, into
// `fields` (cleared first): none for an empty line; a trailing separator ends the last field
// and, with `trailing_empty`, adds an empty one after it.
inline void split_fields(std::string_view line, char separator, bool trailing_empty,
                         std::vector<std::string_view>* fields) {
  fields->clear();
  std::size_t start = 0;
  while (start < line.size()) {
    const std::size_t end = line.find(separator, start);
    if (end == std::string_view::npos) {
      fields->push_back(line.substr(start));
      return;
    }
    fields->push_back(line.substr(start, end - start));
    start = end + 1;
  }
  if (!line.empty() && trailing_empty) fields->emplace_back();
}

// Reads the whole of `text` as a base-10 integer as std::stoll would (leading white space and
// one sign, '+' or '-', allowed); false if anything is left, nothing is read, or it overflows.
inline bool read_integer(std::string_view text, long long* value) {
  std::size_t at = 0;
  while (at < text.size() && is_space(text[at])) ++at;
  // from_chars takes '-' but not '+'.
  if (at + 1 < text.size() && text[at] == '+' &&
      std::isdigit(static_cast<unsigned char>(text[at + 1]))) {
    ++at;
  }
  const char* const last = text.data() + text.size();
  const auto [end, error] = std::from_chars(text.data() + at, last, *value);
  return error == std::errc() && end == last;
}

// The same after dropping trailing white space (a field before a line's '\r', or padded).
inline bool read_trimmed_integer(std::string_view text, long long* value) {
  while (!text.empty() && is_space(text.back())) {
    text.remove_suffix(1);
  }
  return !text.empty() && read_integer(text, value);
}

}  // namespace topoep
