#include "traces/esft_import.h"

#include <fstream>
#include <string_view>

#include "common/file_input_error.h"
#include "traces/text_fields.h"

namespace topoep {

std::int64_t EsftLayer::num_tokens() const {
  std::int64_t ids = 0;
  for (const auto& sequence : sequences) ids += static_cast<std::int64_t>(sequence.size());
  return top_k == 0 ? 0 : ids / top_k;
}

EsftLayer read_esft_layer(const std::string& path, int num_experts, int top_k) {
  EsftLayer layer;
  layer.top_k = top_k;
  read_esft_layer(path, num_experts, top_k, [&](const ExpertId* ids, std::size_t count) {
    layer.sequences.emplace_back(ids, ids + count);
  });
  return layer;
}

void read_esft_layer(const std::string& path, int num_experts, int top_k,
                     const std::function<void(const ExpertId* ids, std::size_t count)>& sequence) {
  std::ifstream in(path);
  if (!in) throw FileInputError(path, "", "cannot open the file for reading");
  std::vector<ExpertId> ids;
  std::vector<std::string_view> fields;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    const std::string where = "line " + std::to_string(line_number);
    const std::size_t split = line.find("\t\t");
    if (split == std::string::npos) {
      throw FileInputError(path, where, "has no double tab between expert ids and gate weights");
    }
    ids.clear();
    split_fields(std::string_view(line).substr(0, split), '\t', false, &fields);
    for (const std::string_view field : fields) {
      long long value = -1;
      if (!read_integer(field, &value) || value < 0 || value >= num_experts) {
        throw FileInputError(path, where,
                             "expert id '" + std::string(field) + "' is not an integer in [0, " +
                                 std::to_string(num_experts) + ")");
      }
      ids.push_back(static_cast<ExpertId>(value));
    }
    if (ids.size() % static_cast<std::size_t>(top_k) != 0) {
      throw FileInputError(path, where,
                           std::to_string(ids.size()) + " expert ids is not a multiple of top-k " +
                               std::to_string(top_k));
    }
    sequence(ids.data(), ids.size());
  }
}

}  // namespace topoep
