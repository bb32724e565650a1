#include "traces/trace_import.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/file_input_error.h"
#include "solver/input_error.h"
#include "traces/esft_import.h"
#include "traces/sglang_stats.h"
#include "traces/token_files.h"
#include "traces/trace_writer.h"
#include "traces/unit_packing.h"

namespace topoep {

namespace {

// The options every importer checks before it reads a byte: a zero here divided by zero or
// indexed an empty layer list deep in the packing (a crash, not an error). `shape` and
// `packing` may be null (formats that take neither); `num_experts` is -1 where the file says.
void check_import_options(const ImportShape* shape, const PackingOptions* packing, int num_experts,
                          int top_k) {
  if (shape != nullptr) {
    require_at_least(shape->num_ranks, 1, "num_ranks");
    require_at_least(shape->gpus_per_node, 1, "gpus_per_node");
    require_at_least(shape->tokens_per_rank, 1, "tokens_per_rank");
    require_at_least(shape->microbatches_per_step, 1, "microbatches_per_step");
  }
  if (packing != nullptr) {
    require_at_least(packing->unit_tokens, 0, "unit_tokens");
    require_at_least(packing->bootstrap_units, 0, "bootstrap_units");
  }
  require_at_least(top_k, 1, "top_k");
  if (num_experts == -1) return;
  require_at_least(num_experts, 1, "num_experts");
  if (top_k > num_experts) {
    throw InputError("top_k", "must be at most the " + std::to_string(num_experts) +
                                  " experts (got " + std::to_string(top_k) + ")");
  }
}

// One layer's token stream cut into units of `unit_tokens` tokens (the last may be shorter).
TokenUnits token_runs(std::vector<ExpertId> experts, int top_k, int unit_tokens) {
  TokenUnits units;
  const std::size_t step = static_cast<std::size_t>(std::max(1, unit_tokens)) * top_k;
  units.experts = std::move(experts);
  for (std::size_t first = step; first < units.experts.size(); first += step) {
    units.begin.push_back(first);
  }
  if (!units.experts.empty()) units.begin.push_back(units.experts.size());
  return units;
}

// Every layer must hold the same tokens, cut into the same units, so that a record's layers see
// the same tokens. Throws FileInputError naming the first layer that does not (its file) and
// the first layer's file, with the first line that differs where units are sequences (`lines`,
// one per line), else both token counts (units of a fixed number of tokens differ only where
// the counts do).
void check_same_units(const std::vector<TokenUnits>& layers, const std::vector<std::string>& files,
                      int top_k, bool lines) {
  const TokenUnits& first = layers.front();
  for (std::size_t l = 1; l < layers.size(); ++l) {
    const TokenUnits& layer = layers[l];
    if (layer.begin == first.begin) continue;
    const int common = std::min(layer.num_units(), first.num_units());
    int unit = 0;
    while (unit < common && layer.unit_size(unit) == first.unit_size(unit)) ++unit;
    std::string message;
    if (lines && unit < common) {
      message = "line " + std::to_string(unit + 1) + " holds " +
                std::to_string(layer.unit_size(unit) / top_k) + " tokens where " + files.front() +
                "'s holds " + std::to_string(first.unit_size(unit) / top_k);
    } else if (lines) {
      message = "holds " + std::to_string(layer.num_units()) + " sequences where " + files.front() +
                " holds " + std::to_string(first.num_units());
    } else {
      message = "holds " + std::to_string(layer.experts.size() / top_k) + " tokens where " +
                files.front() + " holds " + std::to_string(first.experts.size() / top_k);
    }
    throw FileInputError(files[l], "",
                         message + ": every layer must hold the same tokens, in the same order");
  }
}

// Packs every layer's units the same way and writes the records step, microbatch, layer, one
// at a time. `files` names each layer's input in errors.
std::int64_t write_token_trace(const std::string& model, const std::string& source,
                               const std::vector<TokenUnits>& layers,
                               const std::vector<std::string>& files, int num_experts, int top_k,
                               const ImportShape& shape, const PackingOptions& packing,
                               const std::string& natural_unit, const std::string& out) {
  const int num_units = layers.front().num_units();
  check_same_units(layers, files, top_k, natural_unit == "sequence" && packing.unit_tokens <= 0);
  const UnitPacker packer(
      layers.front(), unit_order(num_units, packing.method, packing.bootstrap_units, packing.seed),
      packing.method, top_k, shape.num_ranks, shape.tokens_per_rank);
  const int microbatches = packer.microbatches();
  if (microbatches < shape.microbatches_per_step) {
    throw InputError("tokens_per_rank", "the data fills " + std::to_string(microbatches) +
                                            " microbatches of " + std::to_string(shape.num_ranks) +
                                            " x " + std::to_string(shape.tokens_per_rank) +
                                            " tokens, fewer than one step");
  }
  TraceMetadata m;
  m.model = model;
  m.num_experts = num_experts;
  m.top_k = top_k;
  m.num_ranks = shape.num_ranks;
  m.gpus_per_node = shape.gpus_per_node;
  m.num_layers = static_cast<int>(layers.size());
  m.microbatches = shape.microbatches_per_step;
  m.steps = microbatches / shape.microbatches_per_step;
  m.tokens_per_rank = shape.tokens_per_rank;
  m.source = source;
  m.packing = {{"method", to_string(packing.method)},
               {"unit", packing.unit_tokens > 0 ? std::to_string(packing.unit_tokens) + " tokens"
                                                : natural_unit},
               {"units", num_units},
               {"bootstrap_units", packing.bootstrap_units},
               {"seed", packing.seed},
               {"partial_microbatch", "dropped"}};
  TraceWriter writer(out, m);
  for (int step = 0; step < m.steps; ++step) {
    for (int mb = 0; mb < m.microbatches; ++mb) {
      for (const TokenUnits& layer : layers) {
        writer.add(packer.pack(layer, step * m.microbatches + mb, num_experts));
      }
    }
  }
  writer.finish();
  return m.num_records();
}

}  // namespace

std::int64_t import_esft(const std::string& dir, int num_layers, int num_experts, int top_k,
                         const ImportShape& shape, const PackingOptions& packing,
                         const std::string& out) {
  require_at_least(num_layers, 1, "num_layers");
  check_import_options(&shape, &packing, num_experts, top_k);
  std::vector<TokenUnits> layers;
  std::vector<std::string> files;
  for (int layer = 1; layer <= num_layers; ++layer) {
    files.push_back(dir + "/expert_weights_" + std::to_string(layer) + ".txt");
    EsftLayer esft = read_esft_layer(files.back(), num_experts, top_k);
    if (packing.unit_tokens > 0) {
      std::vector<ExpertId> stream;
      for (const auto& sequence : esft.sequences)
        stream.insert(stream.end(), sequence.begin(), sequence.end());
      layers.push_back(token_runs(std::move(stream), top_k, packing.unit_tokens));
    } else {
      TokenUnits sequences;
      for (const auto& sequence : esft.sequences) {
        sequences.add_unit(sequence.data(), sequence.data() + sequence.size());
      }
      layers.push_back(std::move(sequences));
    }
  }
  return write_token_trace("esft", "ESFT expert scores: " + dir, layers, files, num_experts, top_k,
                           shape, packing, "sequence", out);
}

std::int64_t import_token_files(const std::string& format, const std::string& dir, int num_experts,
                                int top_k, const ImportShape& shape, const PackingOptions& packing,
                                const std::string& out) {
  check_import_options(&shape, &packing, num_experts, top_k);
  std::vector<std::vector<ExpertId>> streams;  // per layer
  std::vector<std::string> files;              // per layer, for errors
  if (format == "flame-csv") {
    std::map<int, std::vector<ExpertId>> by_layer;
    std::map<int, std::string> layer_files;
    for (const std::string& file : files_in_natural_order(dir, ".csv")) {
      TokenLayerFile layer = read_flame_csv(file, num_experts, top_k);
      // FLAME's dumps name the layer in the file name ("..._layer7_..."); their layer_id column
      // may be 0 throughout. The name wins when it has one.
      const std::string name = std::filesystem::path(file).filename().string();
      const std::size_t at = name.find("layer");
      const bool named = at != std::string::npos && at + 5 < name.size() &&
                         std::isdigit(static_cast<unsigned char>(name[at + 5]));
      const int id = named ? std::stoi(name.substr(at + 5)) : layer.layer;
      auto& stream = by_layer[id];
      stream.insert(stream.end(), layer.experts.begin(), layer.experts.end());
      // A layer split into shards is named by its first file.
      std::string& label = layer_files[id];
      if (label.empty()) {
        label = file;
      } else if (label.back() != ')') {
        label += " (and its other shards)";
      }
    }
    for (auto& entry : by_layer) {
      streams.push_back(std::move(entry.second));
      files.push_back(layer_files[entry.first]);
    }
  } else if (format == "topk-csv" || format == "topk-npy") {
    const bool csv = format == "topk-csv";
    for (const std::string& file : files_in_natural_order(dir, csv ? ".csv" : ".npy")) {
      streams.push_back(
          (csv ? read_topk_csv(file, num_experts, top_k) : read_topk_npy(file, num_experts, top_k))
              .experts);
      files.push_back(file);
    }
  } else {
    throw InputError("format", "unknown per-token format '" + format + "'");
  }
  if (streams.empty()) throw FileInputError(dir, "", "holds no " + format + " files");
  std::vector<TokenUnits> layers;
  for (auto& stream : streams)
    layers.push_back(token_runs(std::move(stream), top_k, packing.unit_tokens));
  return write_token_trace(format, format + " files: " + dir, layers, files, num_experts, top_k,
                           shape, packing, "token", out);
}

std::int64_t import_sglang_stats(const std::string& path, int top_k, int steps,
                                 const ImportShape& shape, std::uint64_t seed,
                                 const std::string& out, double concentration) {
  check_import_options(&shape, nullptr, -1, top_k);
  require_at_least(steps, 1, "steps");
  if (!(concentration >= 0 && concentration <= 1e12)) {
    throw InputError("concentration", "must be 0 (plain multinomial) or positive and finite (got " +
                                          std::to_string(concentration) + ")");
  }
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
  m.packing = {
      {"method", concentration > 0 ? "Dirichlet-multinomial around each layer's expert shares"
                                   : "multinomial sampling from each layer's expert shares"},
      {"seed", seed},
      {"record_seed", "seed + record index"},
      {"dense_layers", "skipped"},
      {"concentration", concentration}};
  TraceWriter writer(out, m);
  for (std::int64_t record = 0; record < m.num_records(); ++record) {
    const std::uint64_t record_seed = seed + static_cast<std::uint64_t>(record);
    const std::vector<std::int64_t>& layer = layers[record % m.num_layers];
    // NOTE: the Dirichlet draw and the multinomial use different streams of the record's seed.
    writer.add(sample_counts_from_shares(
        concentration > 0 ? dirichlet_shares(layer, concentration, record_seed ^ 0x5bd1e995ull)
                          : layer,
        shape.num_ranks, shape.tokens_per_rank, top_k, record_seed));
  }
  writer.finish();
  return m.num_records();
}

}  // namespace topoep
