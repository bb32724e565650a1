#include "traces/trace_import.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/file_input_error.h"
#include "common/temp_path.h"
#include "solver/input_error.h"
#include "traces/esft_import.h"
#include "traces/int32_spill.h"
#include "traces/logical_count_reader.h"
#include "traces/read_progress.h"
#include "traces/scratch_table.h"
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

// Every layer's ids, read into one scratch file beside the output, layer after layer, and
// mapped back for the packing (traces/int32_spill.h): the import holds no layer in memory.
class SpilledLayers {
 public:
  explicit SpilledLayers(const std::string& out)
      : scratch_(temp_path_beside(out, ".ids")), spill_(scratch_.path()) {}

  // Starts the next layer; `file` names it in errors.
  void begin_layer(const std::string& file) {
    starts_.push_back(spill_.size());
    sequence_begins_.push_back({0});
    files_.push_back(file);
  }
  // Where a reader puts the layer's ids (any number a call).
  IdSink ids() {
    return [this](const ExpertId* ids, std::size_t count) { spill_.add(ids, count); };
  }
  // Where a reader puts the layer's sequences (one a call).
  IdSink sequences() {
    return [this](const ExpertId* ids, std::size_t count) {
      spill_.add(ids, count);
      sequence_begins_.back().push_back(spill_.size() - starts_.back());
    };
  }
  // Ends the reading: the layers, cut into their sequences, or into runs of `run_ids` ids when
  // that is positive. Valid while this object lives.
  std::vector<TokenUnits> layers(std::size_t run_ids) {
    const ExpertId* const base = spill_.map();
    std::vector<TokenUnits> layers;
    for (std::size_t l = 0; l < starts_.size(); ++l) {
      const std::size_t end = l + 1 < starts_.size() ? starts_[l + 1] : spill_.size();
      const ExpertId* const first = base == nullptr ? nullptr : base + starts_[l];
      layers.push_back(run_ids > 0 ? TokenUnits::runs(first, end - starts_[l], run_ids)
                                   : TokenUnits::sequences(first, std::move(sequence_begins_[l])));
    }
    return layers;
  }
  const std::vector<std::string>& files() const { return files_; }

 private:
  TempPath scratch_;  // removed after spill_ closes
  Int32Spill spill_;
  std::vector<std::size_t> starts_;                        // [layers], into the spill
  std::vector<std::vector<std::size_t>> sequence_begins_;  // [layers][sequences + 1]
  std::vector<std::string> files_;                         // [layers]
};

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
    if (layer.same_units(first)) continue;
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
      message = "holds " + std::to_string(layer.num_ids / top_k) + " tokens where " +
                files.front() + " holds " + std::to_string(first.num_ids / top_k);
    }
    throw FileInputError(files[l], "",
                         message + ": every layer must hold the same tokens, in the same order");
  }
}

// Ids a unit when units are runs of tokens: --unit-tokens, else `natural` tokens (0: the data's
// own sequences, cut no further).
std::size_t run_ids(const PackingOptions& packing, int top_k, int natural = 0) {
  const int tokens = packing.unit_tokens > 0 ? packing.unit_tokens : natural;
  return static_cast<std::size_t>(tokens) * static_cast<std::size_t>(top_k);
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
  // Every unit once, in file order, needs no order to hold (4 bytes a unit).
  const bool reordered = packing.method == PackingMethod::kRandom || packing.bootstrap_units > 0;
  const UnitPacker packer(
      layers.front(),
      reordered ? unit_order(num_units, packing.method, packing.bootstrap_units, packing.seed)
                : std::vector<int>{},
      packing.method, top_k, shape.num_ranks, shape.tokens_per_rank);
  const int microbatches = packer.microbatches();
  if (microbatches < shape.microbatches_per_step) {
    // What to change is the user's choice; the figures say by how much.
    const std::size_t tokens = layers.front().num_ids / static_cast<std::size_t>(top_k);
    throw InputError(
        "tokens_per_rank",
        "the data (" + std::to_string(tokens) + " tokens a layer" +
            (packing.bootstrap_units > 0
                 ? ", resampled as " + std::to_string(packing.bootstrap_units) + " units"
                 : std::string()) +
            ") fills " + std::to_string(microbatches) + " microbatches of " +
            std::to_string(shape.num_ranks) + " x " + std::to_string(shape.tokens_per_rank) +
            " tokens, fewer than one step of " + std::to_string(shape.microbatches_per_step) +
            ": fewer ranks, fewer tokens per rank or more bootstrapped units would fill one");
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
  TraceWriter writer(out, m, ProgressDisplay::kTerminal);
  const int used = m.steps * m.microbatches;
  if (!reordered) {
    // The units in the layers' order: each layer's ids are read front to back.
    for (int mb = 0; mb < used; ++mb) {
      for (const TokenUnits& layer : layers) writer.add(packer.pack(layer, mb, num_experts));
    }
    writer.finish();
    return m.num_records();
  }
  // A shuffled or resampled order would jump through the ids (UnitPacker::pack_all()): every
  // layer is counted in one pass over its units into a scratch table of all its microbatches,
  // beside `out` as the ids are, then the records are written from it.
  const std::size_t matrix = static_cast<std::size_t>(shape.num_ranks) * num_experts;
  const std::size_t layer_counts = static_cast<std::size_t>(microbatches) * matrix;
  const TempPath table_path = temp_path_beside(out, ".counts");
  ScratchTable table(table_path.path(), layers.size() * layer_counts);
  packer.pack_all(layers, num_experts, table.data(), ProgressDisplay::kTerminal);
  for (int mb = 0; mb < used; ++mb) {
    for (std::size_t l = 0; l < layers.size(); ++l) {
      const TokenCount* const first = table.data() + l * layer_counts + mb * matrix;
      writer.add(RoutingCounts(shape.num_ranks, num_experts,
                               std::vector<TokenCount>(first, first + matrix)));
    }
  }
  writer.finish();
  return m.num_records();
}

// ESFT's layer files: DIR/expert_weights_<L>.txt for num_layers layers from the lowest L, 1 as
// ESFT numbers them (or 0, for a dump numbered from 0), or, where num_layers is 0, up to the
// last such file in DIR. Throws FileInputError naming the first one missing: a layer left out
// would shift every later layer's id.
std::vector<std::string> esft_layer_files(const std::string& dir, int num_layers) {
  const std::string prefix = "expert_weights_", suffix = ".txt";
  std::set<int> found;
  std::error_code error;
  if (std::filesystem::is_regular_file(dir, error)) {
    throw FileInputError(dir, "",
                         "is a file; esft reads an ESFT task directory (" + prefix + "<L>" +
                             suffix + " for each layer L): give the directory");
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string digits =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    const bool number = digits.size() <= 6 && (digits[0] != '0' || digits == "0") &&
                        std::all_of(digits.begin(), digits.end(), [](char c) {
                          return std::isdigit(static_cast<unsigned char>(c));
                        });
    if (number) found.insert(std::stoi(digits));
  }
  if (error) throw FileInputError(dir, "", "cannot read the directory: " + error.message());
  if (found.empty()) {
    throw FileInputError(dir, "", "holds no ESFT layer files (expert_weights_<L>.txt, L from 1)");
  }
  const int first = std::min(*found.begin(), 1), last = *found.rbegin();
  const int end = num_layers > 0 ? first + num_layers : last + 1;
  const std::string last_file = prefix + std::to_string(last) + suffix;
  std::vector<std::string> files;
  for (int layer = first; layer < end; ++layer) {
    const std::string file = dir + "/" + prefix + std::to_string(layer) + suffix;
    if (found.count(layer) == 0) {
      throw FileInputError(
          file, "",
          num_layers > 0 ? "is missing (" + std::to_string(num_layers) +
                               " layers were asked for; the last layer file is " + last_file + ")"
                         : "is missing, yet the directory holds " + last_file +
                               ": every layer from " + std::to_string(first) +
                               " to the last must be there (a gap would shift the later layers' "
                               "ids)");
    }
    files.push_back(file);
  }
  return files;
}

}  // namespace

int resolve_top_k(int top_k, int num_experts, const TopKForExperts& top_k_for,
                  const std::string& what) {
  if (top_k == 0) {
    if (!top_k_for) {
      throw InputError("top_k", what + " does not say how many experts a token picks: give it");
    }
    top_k = top_k_for(num_experts);
  }
  check_import_options(nullptr, nullptr, num_experts, top_k);
  return top_k;
}

std::int64_t import_esft(const std::string& dir, int num_layers, int num_experts, int top_k,
                         const ImportShape& shape, const PackingOptions& packing,
                         const std::string& out) {
  require_at_least(num_layers, 0, "num_layers");
  require_at_least(num_experts, 0, "num_experts");
  require_at_least(top_k, 0, "top_k");
  if (num_experts == 0) num_experts = kEsftExperts;
  if (top_k == 0) top_k = kEsftTopK;
  check_import_options(&shape, &packing, num_experts, top_k);
  const std::vector<std::string> files = esft_layer_files(dir, num_layers);
  SpilledLayers spilled(out);
  {
    ReadProgress progress(files);  // ends its line before the records' bar starts
    for (const std::string& file : files) {
      spilled.begin_layer(file);
      read_esft_layer(file, num_experts, top_k, spilled.sequences());
      progress.file_read(file);
    }
  }
  return write_token_trace("esft", "ESFT expert scores: " + dir,
                           spilled.layers(run_ids(packing, top_k)), spilled.files(), num_experts,
                           top_k, shape, packing, "sequence", out);
}

std::int64_t import_token_files(const std::string& format, const std::string& dir, int num_experts,
                                int top_k, const ImportShape& shape, const PackingOptions& packing,
                                const std::string& out) {
  if (format != "flame-csv" && format != "topk-csv" && format != "topk-npy") {
    throw InputError("format", "unknown per-token format '" + format + "'");
  }
  const bool flame = format == "flame-csv";
  require_at_least(num_experts, 0, "num_experts");
  if (!flame && num_experts == 0) {
    throw InputError("num_experts", "not given, and " + format +
                                        " files list the experts each token picks, not how many "
                                        "the model has: give it");
  }
  require_at_least(top_k, 0, "top_k");
  // Checked with a stand-in for what the first file will say, before any file is read.
  check_import_options(&shape, &packing, num_experts > 0 ? num_experts : -1, top_k > 0 ? top_k : 1);
  // One file is a directory of that file alone (a FLAME CSV with its layer_id column, an .npy of
  // every layer, one layer's top-k CSV).
  const std::vector<std::string> files =
      std::filesystem::is_regular_file(dir)
          ? std::vector<std::string>{dir}
          : files_in_natural_order(dir, format == "topk-npy" ? ".npy" : ".csv");
  if (files.empty()) throw FileInputError(dir, "", "holds no " + format + " files");
  if (num_experts == 0 || top_k == 0) {
    // What the data says: FLAME's header counts the experts, every format's first token the
    // experts it picks; each later row is held to them as to given values.
    const TokenFileShape first = read_token_file_shape(format, files.front());
    if (num_experts == 0) num_experts = first.num_experts;
    if (top_k == 0) top_k = first.top_k;
    if (top_k == 0) {
      throw InputError("top_k", files.front() + " holds no token to learn it from: give it");
    }
    check_import_options(nullptr, nullptr, num_experts, top_k);
  }
  SpilledLayers spilled(out);
  std::optional<ReadProgress> progress(std::in_place,
                                       files);  // reset before the records' bar starts
  if (flame) {
    // FLAME's dumps name the layer in the file name ("..._layer7_..."); their layer_id column
    // may be 0 throughout. The name wins when it has one. A layer split into shards (decoder
    // positions) is their concatenation in natural name order, named by its first file.
    std::map<int, std::vector<std::string>> by_layer;
    for (const std::string& file : files) {
      const std::string name = std::filesystem::path(file).filename().string();
      const std::size_t at = name.find("layer");
      const bool named = at != std::string::npos && at + 5 < name.size() &&
                         std::isdigit(static_cast<unsigned char>(name[at + 5]));
      by_layer[named ? std::stoi(name.substr(at + 5))
                     : flame_csv_first_layer(file, num_experts, top_k)]
          .push_back(file);
    }
    for (const auto& [layer, shards] : by_layer) {
      spilled.begin_layer(shards.size() == 1 ? shards.front()
                                             : shards.front() + " (and its other shards)");
      for (const std::string& shard : shards) {
        read_flame_csv(shard, num_experts, top_k, spilled.ids());
        progress->file_read(shard);
      }
    }
  } else {
    for (const std::string& file : files) {
      if (format == "topk-csv") {
        spilled.begin_layer(file);
        read_topk_csv(file, num_experts, top_k, spilled.ids());
      } else {
        // A [layers, tokens, top_k] array is that many layers, in order.
        const int layers = topk_npy_layers(file);
        for (int layer = 0; layer < layers; ++layer) {
          spilled.begin_layer(layers == 1 ? file : file + " (layer " + std::to_string(layer) + ")");
          read_topk_npy(file, num_experts, top_k, spilled.ids(), layer);
        }
      }
      progress->file_read(file);
    }
  }
  progress.reset();
  if (spilled.files().empty()) {  // only .npy arrays of zero layers
    throw FileInputError(dir, "", "holds no layer: its arrays declare 0 layers");
  }
  return write_token_trace(format, format + " files: " + dir,
                           spilled.layers(run_ids(packing, top_k, 1)), spilled.files(), num_experts,
                           top_k, shape, packing, "token", out);
}

std::int64_t import_sglang_stats(const std::string& path, int top_k, int steps,
                                 const ImportShape& shape, std::uint64_t seed,
                                 const std::string& out, double concentration,
                                 const TopKForExperts& top_k_for) {
  require_at_least(top_k, 0, "top_k");
  check_import_options(&shape, nullptr, -1, top_k > 0 ? top_k : 1);
  require_at_least(steps, 0, "steps");
  if (!(concentration >= 0 && concentration <= 1e12)) {
    throw InputError("concentration", "must be 0 (plain multinomial) or positive and finite (got " +
                                          std::to_string(concentration) + ")");
  }
  const SglangLogicalCount read = read_sglang_stats_file(path);
  auto tokens = [&](int pass, int layer) {
    const std::int64_t* const row = read.row(pass, layer);
    return std::any_of(row, row + read.experts, [](std::int64_t count) { return count > 0; });
  };
  // Dense layers have no tokens in any pass; a pass with none in any layer is a slot of
  // SGLang's buffer that no forward pass filled.
  std::vector<int> layers, passes;
  for (int layer = 0; layer < read.layers; ++layer) {
    for (int pass = 0; pass < read.passes; ++pass) {
      if (!tokens(pass, layer)) continue;
      layers.push_back(layer);
      break;
    }
  }
  if (layers.empty()) throw FileInputError(path, "logical_count", "has no layer with tokens");
  for (int pass = 0; pass < read.passes; ++pass) {
    const auto empty =
        std::find_if(layers.begin(), layers.end(), [&](int layer) { return !tokens(pass, layer); });
    if (empty == layers.begin()) continue;
    if (empty != layers.end()) {
      throw FileInputError(
          path, "logical_count[" + std::to_string(pass) + "][" + std::to_string(*empty) + "]",
          "has no tokens where the pass's other MoE layers have some");
    }
    passes.push_back(pass);
  }
  const int microbatches = shape.microbatches_per_step;
  if (read.per_pass) {
    // A microbatch a pass, in the file's order.
    const int whole_steps = static_cast<int>(passes.size()) / microbatches;
    if (whole_steps == 0 || steps > whole_steps) {
      const std::string held =
          path + "'s " + std::to_string(passes.size()) + " forward passes with tokens fill ";
      const std::string of = " of " + std::to_string(microbatches) + " microbatches (one a pass)";
      throw InputError(whole_steps == 0 ? "microbatches_per_step" : "steps",
                       whole_steps == 0
                           ? held + "no step" + of
                           : held + std::to_string(whole_steps) + " steps" + of +
                                 ", fewer than the " + std::to_string(steps) + " asked for");
    }
    if (steps == 0) steps = whole_steps;
  } else if (steps == 0) {
    steps = kSampledSteps;
  }
  TraceMetadata m;
  m.model = "sglang-stats";
  m.num_experts = read.experts;
  m.top_k = resolve_top_k(top_k, m.num_experts, top_k_for, "an SGLang statistics file");
  m.num_ranks = shape.num_ranks;
  m.gpus_per_node = shape.gpus_per_node;
  m.num_layers = static_cast<int>(layers.size());
  m.microbatches = microbatches;
  m.steps = steps;
  m.tokens_per_rank = shape.tokens_per_rank;
  m.source = "SGLang expert-load statistics: " + path;
  const std::string shares = read.per_pass ? "each forward pass's expert shares, microbatch i "
                                             "from the i-th pass with tokens"
                                           : "each layer's expert shares";
  m.packing = {{"method", concentration > 0 ? "Dirichlet-multinomial around " + shares
                                            : "multinomial sampling from " + shares},
               {"seed", seed},
               {"record_seed", "seed + record index"},
               {"dense_layers", "skipped"},
               {"concentration", concentration}};
  if (read.per_pass) {
    m.packing["passes"] = passes.size();
    m.packing["empty_passes"] = "dropped";
  }
  TraceWriter writer(out, m, ProgressDisplay::kTerminal);
  for (std::int64_t record = 0; record < m.num_records(); ++record) {
    const std::uint64_t record_seed = seed + static_cast<std::uint64_t>(record);
    const int pass = read.per_pass ? passes[record / m.num_layers] : 0;
    const std::int64_t* const row = read.row(pass, layers[record % m.num_layers]);
    const std::vector<std::int64_t> layer(row, row + read.experts);
    // NOTE: the Dirichlet draw and the multinomial use different streams of the record's seed.
    writer.add(sample_counts_from_shares(
        concentration > 0 ? dirichlet_shares(layer, concentration, record_seed ^ 0x5bd1e995ull)
                          : layer,
        shape.num_ranks, shape.tokens_per_rank, m.top_k, record_seed));
  }
  writer.finish();
  return m.num_records();
}

}  // namespace topoep
