#include "traces/counts_json.h"

#include "common/json_fields.h"

namespace topoep {
namespace {

RoutingCounts parse_matrix(const nlohmann::json& rows, const std::string& path,
                           const std::string& field) {
  if (!rows.is_array() || rows.empty()) {
    throw FileInputError(path, field, "must be a non-empty array of rows (one per source rank)");
  }
  std::vector<std::vector<TokenCount>> values;
  for (std::size_t src = 0; src < rows.size(); ++src) {
    const std::string row_field = field + "[" + std::to_string(src) + "]";
    const nlohmann::json& row = rows[src];
    if (!row.is_array() || row.size() != rows[0].size() || row.empty()) {
      throw FileInputError(path, row_field,
                           "must be an array of one count per expert, as long as row 0");
    }
    std::vector<TokenCount> counts;
    for (std::size_t expert = 0; expert < row.size(); ++expert) {
      const nlohmann::json& value = row[expert];
      if (!value.is_number_integer()) {
        throw FileInputError(path, row_field + "[" + std::to_string(expert) + "]",
                             "must be a whole number of tokens, got " + value.dump());
      }
      if (value.is_number_unsigned() && value.get<std::uint64_t>() > (1ull << 62)) {
        throw FileInputError(path, row_field + "[" + std::to_string(expert) + "]",
                             "must be at most 2^62 tokens, got " + value.dump());
      }
      const TokenCount count = value.get<TokenCount>();
      if (count < 0) {
        throw FileInputError(path, row_field + "[" + std::to_string(expert) + "]",
                             "must not be negative, got " + value.dump());
      }
      counts.push_back(count);
    }
    values.push_back(std::move(counts));
  }
  return RoutingCounts::from_rows(values);
}

}  // namespace

std::vector<RoutingCounts> read_counts_json(const std::string& path) {
  const nlohmann::json document = parse_json_text(read_text_file(path), path);
  if (!document.is_object()) throw FileInputError(path, "(root)", "must be a JSON object");
  const bool one = document.contains("counts"), many = document.contains("layers");
  if (one == many) {
    throw FileInputError(path, one ? "layers" : "counts",
                         "give exactly one of \"counts\" (one layer) or \"layers\"");
  }
  for (const auto& item : document.items()) {
    if (item.key() != "counts" && item.key() != "layers" && item.key() != "comment") {
      throw FileInputError(path, item.key(), "is not a known field");
    }
  }
  if (one) return {parse_matrix(document["counts"], path, "counts")};
  const nlohmann::json& layers = document["layers"];
  if (!layers.is_array() || layers.empty()) {
    throw FileInputError(path, "layers", "must be a non-empty array of rank x expert matrices");
  }
  std::vector<RoutingCounts> result;
  for (std::size_t layer = 0; layer < layers.size(); ++layer) {
    const std::string field = "layers[" + std::to_string(layer) + "]";
    result.push_back(parse_matrix(layers[layer], path, field));
    if (result.back().num_ranks() != result[0].num_ranks() ||
        result.back().num_experts() != result[0].num_experts()) {
      throw FileInputError(path, field, "has a different shape from layers[0]");
    }
  }
  return result;
}

}  // namespace topoep
