#include "common/json_fields.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace topoep {
namespace {

std::string type_name(const nlohmann::json& value) { return value.type_name(); }

std::string format_number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    throw FileInputError(
        origin, "", "invalid JSON at byte " + std::to_string(error.byte) + ": " + error.what());
  } catch (const nlohmann::json::exception& error) {
    // NOTE: e.g. a number beyond double range ("1e999") is out_of_range, not a parse_error.
    throw FileInputError(origin, "", std::string("invalid JSON: ") + error.what());
  }
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileInputError(path, "", "cannot open the file for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw FileInputError(path, "", "reading the file failed");
  return text.str();
}

JsonObjectReader::JsonObjectReader(const nlohmann::json& value, std::string origin,
                                   std::string path)
    : value_(value), origin_(std::move(origin)), path_(std::move(path)) {
  if (!value_.is_object()) {
    throw FileInputError(origin_, path_.empty() ? "(root)" : path_,
                         "must be a JSON object, got " + type_name(value_));
  }
}

std::string JsonObjectReader::field_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonObjectReader::fail(const std::string& key, const std::string& message) const {
  throw FileInputError(origin_, field_path(key), message);
}

bool JsonObjectReader::has(const std::string& key) const { return value_.contains(key); }

const nlohmann::json& JsonObjectReader::require(const std::string& key) {
  known_.push_back(key);
  const auto found = value_.find(key);
  if (found == value_.end()) fail(key, "is missing");
  return *found;
}

std::string JsonObjectReader::string_field(const std::string& key) {
  const nlohmann::json& value = require(key);
  if (!value.is_string()) fail(key, "must be a string, got " + type_name(value));
  return value.get<std::string>();
}

std::int64_t JsonObjectReader::int_field(const std::string& key, std::int64_t min,
                                         std::int64_t max) {
  const nlohmann::json& value = require(key);
  if (!value.is_number_integer()) fail(key, "must be an integer, got " + value.dump());
  // NOTE: an unsigned value above INT64_MAX would wrap in get<int64_t>(); reject it first.
  if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) {
    fail(key, "must be at most " + std::to_string(max) + ", got " + value.dump());
  }
  const std::int64_t number = value.get<std::int64_t>();
  if (number < min || number > max) {
    fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                  std::to_string(number));
  }
  return number;
}

double JsonObjectReader::number_field(const std::string& key, double min, bool min_exclusive,
                                      double max) {
  const nlohmann::json& value = require(key);
  if (!value.is_number()) fail(key, "must be a number, got " + value.dump());
  const double number = value.get<double>();
  const bool below = min_exclusive ? !(number > min) : !(number >= min);
  if (!std::isfinite(number) || below || number > max) {
    fail(key, std::string("must be ") + (min_exclusive ? "> " : ">= ") + format_number(min) +
                  " and <= " + format_number(max) + ", got " + value.dump());
  }
  return number;
}

std::vector<double> JsonObjectReader::number_array_field(const std::string& key) {
  const nlohmann::json& value = require(key);
  if (!value.is_array()) fail(key, "must be an array of numbers, got " + type_name(value));
  std::vector<double> numbers;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_number()) {
      fail(key, "element " + std::to_string(i) + " must be a number, got " + value[i].dump());
    }
    numbers.push_back(value[i].get<double>());
  }
  return numbers;
}

JsonObjectReader JsonObjectReader::object_field(const std::string& key) {
  return JsonObjectReader(require(key), origin_, field_path(key));
}

void JsonObjectReader::finish() const {
  for (const auto& item : value_.items()) {
    const bool known = item.key() == "comment" ||
                       std::find(known_.begin(), known_.end(), item.key()) != known_.end();
    if (!known) fail(item.key(), "is not a known field");
  }
}

}  // namespace topoep
