#include "traces/trace_import.h"

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>
#include <vector>

#include "common/file_input_error.h"
#include "solver/input_error.h"
#include "traces/esft_import.h"
#include "traces/sglang_stats.h"
#include "traces/token_packing.h"
#include "traces/trace_writer.h"

namespace topoep {

std::int64_t import_esft(const std::string& dir, int num_layers, int num_experts, int top_k,
                         const ImportShape& shape, const std::string& out) {
  std::vector<std::vector<RoutingCounts>> by_layer;  // [layer][microbatch]
  for (int layer = 1; layer <= num_layers; ++layer) {
    const EsftLayer esft = read_esft_layer(
        dir + "/expert_weights_" + std::to_string(layer) + ".txt", num_experts, top_k);
    std::vector<ExpertId> stream;
    for (const auto& sequence : esft.sequences)
      stream.insert(stream.end(), sequence.begin(), sequence.end());
    by_layer.push_back(
        pack_tokens_contiguous(stream, top_k, num_experts, shape.num_ranks, shape.tokens_per_rank));
    if (by_layer.back().size() != by_layer.front().size()) {
      throw FileInputError(dir + "/expert_weights_" + std::to_string(layer) + ".txt", "",
                           "holds a different number of tokens than expert_weights_1.txt");
    }
  }
  const int microbatches = static_cast<int>(by_layer.front().size());
  if (microbatches < shape.microbatches_per_step) {
    throw InputError("tokens_per_rank", "the data fills " + std::to_string(microbatches) +
                                            " microbatches of " + std::to_string(shape.num_ranks) +
                                            " x " + std::to_string(shape.tokens_per_rank) +
                                            " tokens, fewer than one step");
  }
  TraceMetadata m;
  m.model = "esft";
  m.num_experts = num_experts;
  m.top_k = top_k;
  m.num_ranks = shape.num_ranks;
  m.gpus_per_node = shape.gpus_per_node;
  m.num_layers = num_layers;
  m.microbatches = shape.microbatches_per_step;
  m.steps = microbatches / shape.microbatches_per_step;
  m.tokens_per_rank = shape.tokens_per_rank;
  m.source = "ESFT expert scores: " + dir;
  m.packing = {{"method", "contiguous"},
               {"unit", "tokens of all sequences in file order"},
               {"partial_microbatch", "dropped"}};
  TraceWriter writer(out, m);
  for (int step = 0; step < m.steps; ++step) {
    for (int mb = 0; mb < m.microbatches; ++mb) {
      for (int layer = 0; layer < num_layers; ++layer)
        writer.add(by_layer[layer][step * m.microbatches + mb]);
    }
  }
  writer.finish();
  return m.num_records();
}

std::int64_t import_sglang_stats(const std::string& path, int top_k, int steps,
                                 const ImportShape& shape, std::uint64_t seed,
                                 const std::string& out) {
  std::vector<std::vector<std::int64_t>> layers;
  for (auto& layer : read_sglang_logical_count(path)) {
    std::int64_t total = 0;
    for (const std::int64_t count : layer) total += count;
    if (total > 0) layers.push_back(std::move(layer));
  }
  if (layers.empty()) throw FileInputError(path, "logical_count", "has no layer with tokens");
  TraceMetadata m;
  m.model = "sglang-stats";
  m.num_experts = static_cast<int>(layers[0].size());
  m.top_k = top_k;
  m.num_ranks = shape.num_ranks;
  m.gpus_per_node = shape.gpus_per_node;
  m.num_layers = static_cast<int>(layers.size());
  m.microbatches = shape.microbatches_per_step;
  m.steps = steps;
  m.tokens_per_rank = shape.tokens_per_rank;
  m.source = "SGLang expert-load statistics: " + path;
  m.packing = {{"method", "multinomial sampling from each layer's expert shares"},
               {"seed", seed},
               {"record_seed", "seed + record index"},
               {"dense_layers", "skipped"},
               {"overdispersion", "none (plain multinomial)"}};
  TraceWriter writer(out, m);
  for (std::int64_t record = 0; record < m.num_records(); ++record) {
    writer.add(sample_counts_from_shares(layers[record % m.num_layers], shape.num_ranks,
                                         shape.tokens_per_rank, top_k,
                                         seed + static_cast<std::uint64_t>(record)));
  }
  writer.finish();
  return m.num_records();
}

std::int64_t import_jsonl(const std::string& path, int top_k, int gpus_per_node,
                          const std::string& out) {
  std::ifstream in(path);
  if (!in) throw FileInputError(path, "", "cannot open the file for reading");
  std::map<std::tuple<int, int, int, int>, std::vector<TokenCount>> rows;  // (s, mb, l, rank)
  int steps = 0, microbatches = 0, layers = 0, ranks = 0, experts = -1;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "line " + std::to_string(number);
    nlohmann::json value;
    try {
      value = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& error) {
      throw FileInputError(path, where, std::string("invalid JSON: ") + error.what());
    }
    int key[4];
    const char* names[4] = {"step", "microbatch", "layer", "rank"};
    for (int i = 0; i < 4; ++i) {
      if (!value.contains(names[i]) || !value[names[i]].is_number_integer() ||
          value[names[i]].get<long long>() < 0 || value[names[i]].get<long long>() > (1 << 30)) {
        throw FileInputError(path, where + " " + names[i], "must be a non-negative integer");
      }
      key[i] = value[names[i]].get<int>();
    }
    if (!value.contains("counts") || !value["counts"].is_array() || value["counts"].empty()) {
      throw FileInputError(path, where + " counts",
                           "must be a non-empty array of per-expert counts");
    }
    std::vector<TokenCount> counts;
    for (const auto& count : value["counts"]) {
      if (!count.is_number_integer() || count.get<long long>() < 0) {
        throw FileInputError(path, where + " counts",
                             "must hold non-negative integers, got " + count.dump());
      }
      counts.push_back(count.get<TokenCount>());
    }
    if (experts < 0) experts = static_cast<int>(counts.size());
    if (static_cast<int>(counts.size()) != experts) {
      throw FileInputError(path, where + " counts",
                           "has " + std::to_string(counts.size()) + " experts, earlier lines " +
                               std::to_string(experts));
    }
    if (!rows.emplace(std::make_tuple(key[0], key[1], key[2], key[3]), std::move(counts)).second) {
      throw FileInputError(path, where,
                           "repeats step " + std::to_string(key[0]) + ", microbatch " +
                               std::to_string(key[1]) + ", layer " + std::to_string(key[2]) +
                               ", rank " + std::to_string(key[3]));
    }
    steps = std::max(steps, key[0] + 1);
    microbatches = std::max(microbatches, key[1] + 1);
    layers = std::max(layers, key[2] + 1);
    ranks = std::max(ranks, key[3] + 1);
  }
  if (rows.empty()) throw FileInputError(path, "", "holds no records");
  const std::int64_t expected = static_cast<std::int64_t>(steps) * microbatches * layers * ranks;
  if (static_cast<std::int64_t>(rows.size()) != expected) {
    for (int s = 0; s < steps; ++s)
      for (int mb = 0; mb < microbatches; ++mb)
        for (int l = 0; l < layers; ++l)
          for (int r = 0; r < ranks; ++r)
            if (!rows.count(std::make_tuple(s, mb, l, r))) {
              throw FileInputError(path, "",
                                   "has no line for step " + std::to_string(s) + ", microbatch " +
                                       std::to_string(mb) + ", layer " + std::to_string(l) +
                                       ", rank " + std::to_string(r));
            }
  }
  TraceMetadata m;
  m.model = "jsonl";
  m.num_experts = experts;
  m.top_k = top_k;
  m.num_ranks = ranks;
  m.gpus_per_node = gpus_per_node;
  m.num_layers = layers;
  m.microbatches = microbatches;
  m.steps = steps;
  m.tokens_per_rank = 0;  // not declared: rows are taken as recorded
  m.source = "JSON lines: " + path;
  m.packing = {{"method", "recorded per rank"}};
  TraceWriter writer(out, m);
  std::vector<TokenCount> values(static_cast<std::size_t>(ranks) * experts);
  auto it = rows.begin();  // map order is (step, microbatch, layer, rank): the record order
  for (std::int64_t record = 0; record < m.num_records(); ++record) {
    for (int r = 0; r < ranks; ++r, ++it)
      std::copy(it->second.begin(), it->second.end(),
                values.begin() + static_cast<std::ptrdiff_t>(r) * experts);
    writer.add(RoutingCounts(ranks, experts, values));
  }
  writer.finish();
  return m.num_records();
}

}  // namespace topoep
