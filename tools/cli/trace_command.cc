#include "tools/cli/trace_command.h"

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <string>

#include "common/flag_errors.h"
#include "common/median.h"
#include "common/parallel_tasks.h"
#include "common/progress.h"
#include "common/text_list.h"
#include "models/model_json.h"
#include "solver/input_error.h"
#include "solver/placement.h"
#include "tools/cli/implied_presets.h"
#include "tools/cli/table.h"
#include "traces/synthetic_trace.h"
#include "traces/trace_import.h"
#include "traces/trace_reader.h"
#include "traces/trace_slice.h"
#include "traces/trace_writer.h"

namespace topoep {
namespace {

struct ImportOptions {
  std::string format;
  std::string input;
  std::string out;
  ImportShape shape;
  // 0: not given, so what the data says, or where it cannot say, the format's default
  // (traces/trace_import.h).
  int layers = 0;
  int experts = 0;
  int top_k = 0;
  int steps = 0;
  std::uint64_t seed = 1;
  std::string packing = "contiguous";
  double concentration = 0;
  int unit_tokens = 0;
  int bootstrap = 0;
};

// "8 ranks (8 per node) x 16 experts, top-6; 2 steps x 1 microbatches x 2 layers".
std::string trace_shape(const TraceMetadata& m) {
  return std::to_string(m.num_ranks) + " ranks (" + std::to_string(m.gpus_per_node) +
         " per node) x " + std::to_string(m.num_experts) + " experts, top-" +
         std::to_string(m.top_k) + "; " + std::to_string(m.steps) + " steps x " +
         std::to_string(m.microbatches) + " microbatches x " + std::to_string(m.num_layers) +
         " layers";
}

// Top-k for counts that cannot say it, when --top-k was not given: the model preset with that
// many experts, if the presets that have it agree (a trace priced with another model's top-k is
// refused, so a wrong guess would not pass unnoticed). `chosen_by` gets the preset's name.
TopKForExperts top_k_from_presets(std::string* chosen_by) {
  return [chosen_by](int num_experts) {
    const std::vector<std::string> presets = model_presets_fitting(num_experts, 0);
    std::set<int> top_ks;
    for (const std::string& name : presets) top_ks.insert(load_model(name).top_k);
    if (top_ks.size() != 1) {
      throw InputError(
          "top_k",
          "not given, and the input's counts cannot say how many experts a "
          "token picks; " +
              (presets.empty() ? "no model preset has " + std::to_string(num_experts) + " experts"
                               : "the presets with " + std::to_string(num_experts) +
                                     " experts differ: " + spoken_list(presets)));
    }
    *chosen_by = presets.front();
    return *top_ks.begin();
  };
}

void run_import(const ImportOptions& o) {
  std::int64_t records = 0;
  const PackingOptions packing{parse_packing_method(o.packing), o.unit_tokens, o.bootstrap, o.seed};
  std::string top_k_preset;  // where top-k came from a preset's
  if (o.format == "esft") {
    records = import_esft(o.input, o.layers, o.experts, o.top_k, o.shape, packing, o.out);
  } else if (o.format == "flame-csv" || o.format == "topk-csv" || o.format == "topk-npy") {
    records = import_token_files(o.format, o.input, o.experts, o.top_k, o.shape, packing, o.out);
  } else if (o.format == "sglang-stats") {
    records = import_sglang_stats(o.input, o.top_k, o.steps, o.shape, o.seed, o.out,
                                  o.concentration, top_k_from_presets(&top_k_preset));
  } else {
    records = import_jsonl(o.input, o.top_k, o.shape.gpus_per_node, o.out,
                           top_k_from_presets(&top_k_preset));
  }
  // The shape as written, top-k included, and where top-k came from when the input cannot say
  // it: a simulation with another model's top-k is refused.
  const TraceMetadata written = TraceReader(o.out).metadata();
  std::cout << o.out << ": " << records << " records imported from " << o.input << ": "
            << trace_shape(written) << "\n";
  if (!top_k_preset.empty()) {
    std::cout << "top-" << written.top_k << ": the " << top_k_preset << " preset's, the model "
              << "preset with " << written.num_experts
              << " experts (the counts cannot say it; --top-k sets it)\n";
  }
}

struct SynthOptions {
  std::string out;
  SyntheticTraceSpec spec;
  std::string popularity = "zipf";
};

void run_synth(SynthOptions options) {
  options.spec.popularity =
      options.popularity == "lognormal" ? Popularity::kLogNormal : Popularity::kZipf;
  // The trace is the same for any thread count.
  const int threads = hardware_threads();
  const std::int64_t records =
      write_synthetic_trace(options.spec, options.out, threads, ProgressDisplay::kTerminal);
  std::cout << options.out << ": " << records << " records written\n";
}

// Gini coefficient of non-negative loads (0: all equal; towards 1: one expert takes all).
double gini(std::vector<double> loads) {
  std::sort(loads.begin(), loads.end());
  const double total = std::accumulate(loads.begin(), loads.end(), 0.0);
  if (total <= 0) return 0;
  double weighted = 0;
  for (std::size_t i = 0; i < loads.size(); ++i)
    weighted += (2.0 * (i + 1) - loads.size() - 1) * loads[i];
  return weighted / (loads.size() * total);
}

// Max/mean of the ranks' loads when every token goes to its expert's home (`home_rank`,
// Placement::contiguous): the imbalance the planners start from, as `topoep simulate` reports
// it for static.
double static_gpu_imbalance(const std::vector<TokenCount>& expert_totals,
                            const std::vector<RankId>& home_rank, int num_ranks) {
  std::vector<TokenCount> loads(static_cast<std::size_t>(num_ranks), 0);
  for (std::size_t e = 0; e < expert_totals.size(); ++e) loads[home_rank[e]] += expert_totals[e];
  const TokenCount total = std::accumulate(loads.begin(), loads.end(), TokenCount{0});
  const TokenCount busiest = *std::max_element(loads.begin(), loads.end());
  return total > 0 ? static_cast<double>(busiest) * num_ranks / static_cast<double>(total) : 1.0;
}

// The simulate command that runs the trace: the preset with its GPUs, else h800-4x8 reshaped to
// its ranks and nodes; the model preset with its experts and top-k, else a file to write.
void print_simulate_hint(const std::string& path, const TraceMetadata& m, bool uneven,
                         std::ostream& out) {
  const std::vector<std::string> topologies = topology_presets_with_gpus(m.num_ranks);
  const std::vector<std::string> models = model_presets_fitting(m.num_experts, m.top_k);
  out << "\nsimulate it with: topoep simulate --trace " << path << " "
      << (topologies.empty() ? h800_reshape_flags(m.num_ranks, m.gpus_per_node)
                             : "--topology " + topologies.front())
      << " --model " << (models.empty() ? "FILE" : models.front())
      << (uneven ? " --uneven-homes" : "") << "\n";
  if (topologies.size() > 1) {
    const std::vector<std::string> others(topologies.begin() + 1, topologies.end());
    out << "  (" << spoken_list(others) << " also " << (others.size() > 1 ? "have " : "has ")
        << m.num_ranks << " GPUs)\n";
  }
  // Ranks of D copies of a preset's group (a recorder on every GPU of a data-parallel run):
  // the smallest such D, each group replayed on its own routing.
  for (int groups = 2; groups <= m.num_ranks / 2; ++groups) {
    if (m.num_ranks % groups != 0) continue;
    const std::vector<std::string> smaller = topology_presets_with_gpus(m.num_ranks / groups);
    if (smaller.empty()) continue;
    out << "  (recorded on " << groups << " data-parallel copies of a " << m.num_ranks / groups
        << "-GPU group, each routing its own ranks: --topology " << smaller.front()
        << " --data-parallel " << groups << ")\n";
    break;
  }
  if (models.size() > 1) {
    const std::vector<std::string> others(models.begin() + 1, models.end());
    out << "  (" << spoken_list(others) << " also " << (others.size() > 1 ? "fit" : "fits")
        << " its experts and top-k)\n";
  }
  if (models.empty()) {
    out << "  (no model preset has " << m.num_experts << " experts and top-" << m.top_k
        << ": topoep model from-hf CONFIG.json writes one from the model's Hugging Face config)\n";
  }
}

void run_info(const std::string& path, bool json) {
  TraceReader reader(path);
  const TraceMetadata& m = reader.metadata();
  std::vector<std::vector<double>> expert_loads(m.num_layers,
                                                std::vector<double>(m.num_experts, 0.0));
  // Per record, on the toolkit's home placement (the uneven one where the ranks do not divide
  // the experts, as `simulate --uneven-homes` lays them out).
  const bool uneven = m.num_experts % m.num_ranks != 0;
  const std::vector<RankId> homes =
      Placement::contiguous(m.num_experts, m.num_ranks, 0, HomeLayout::kUneven).home_rank;
  std::vector<std::vector<double>> gpu_imbalance(m.num_layers);
  TraceRecord record;
  std::int64_t records = 0, assignments = 0;
  std::optional<ProgressBar> progress(std::in_place, "records", m.num_records());
  while (reader.next(record)) {
    const auto totals = record.counts.expert_totals();
    for (int e = 0; e < m.num_experts; ++e)
      expert_loads[record.layer][e] += static_cast<double>(totals[e]);
    gpu_imbalance[record.layer].push_back(static_gpu_imbalance(totals, homes, m.num_ranks));
    assignments += record.counts.total();
    progress->update(++records);
  }
  progress.reset();  // its line ends before the summary
  nlohmann::json layers = nlohmann::json::array();
  TextTable table({"layer", "max/mean expert load", "Gini", "static max/mean GPU load (median)"});
  for (int layer = 0; layer < m.num_layers; ++layer) {
    const auto& loads = expert_loads[layer];
    const double mean = std::accumulate(loads.begin(), loads.end(), 0.0) / loads.size();
    const double ratio = mean > 0 ? *std::max_element(loads.begin(), loads.end()) / mean : 1.0;
    nlohmann::json row = {{"layer", layer}, {"max_mean_expert_load", ratio}, {"gini", gini(loads)}};
    const double imbalance = median(gpu_imbalance[layer]);
    row["static_max_mean_gpu_load_median"] = imbalance;
    layers.push_back(row);
    table.add_row({std::to_string(layer), format_fixed(ratio, 3), format_fixed(gini(loads), 3),
                   format_fixed(imbalance, 3)});
  }
  if (json) {
    std::cout << nlohmann::json{{"metadata", trace_metadata_to_json(m)},
                                {"records", records},
                                {"assignments", assignments},
                                {"uneven_homes", uneven},
                                {"layers", layers}}
                     .dump()
              << "\n";
    return;
  }
  std::cout << path << ": " << m.model << ", " << trace_shape(m) << " = " << records << " records, "
            << assignments << " assignments (" << m.dtype << ")\n"
            << "source: " << m.source << "\npacking: " << m.packing.dump() << "\n\n";
  table.print(std::cout);
  if (uneven) {
    std::cout << "\n(" << m.num_experts << " experts do not divide over " << m.num_ranks
              << " ranks: static GPU loads are on the uneven homes of simulate --uneven-homes)\n";
  }
  print_simulate_hint(path, m, uneven, std::cout);
}

}  // namespace

void add_trace_command(CLI::App& app) {
  CLI::App* trace = app.add_subcommand("trace", "Write, summarise and check routing traces");
  trace->require_subcommand(1);

  CLI::App* synth = trace->add_subcommand("synth", "Write a seeded synthetic trace");
  auto options = std::make_shared<SynthOptions>();
  SyntheticTraceSpec& spec = options->spec;
  spec.num_experts = 64;
  spec.num_layers = 4;
  spec.tokens_per_rank = 256;
  spec.steps = 2;
  synth->add_option("--out", options->out, "Trace directory to create")->required();
  synth->add_option("--experts", spec.num_experts)->capture_default_str();
  synth->add_option("--top-k", spec.top_k)->capture_default_str();
  synth->add_option("--ranks", spec.num_ranks)->capture_default_str();
  synth->add_option("--gpus-per-node", spec.gpus_per_node)->capture_default_str();
  synth->add_option("--layers", spec.num_layers)->capture_default_str();
  synth->add_option("--microbatches", spec.microbatches)->capture_default_str();
  synth->add_option("--steps", spec.steps)->capture_default_str();
  synth->add_option("--tokens-per-rank", spec.tokens_per_rank)->capture_default_str();
  synth->add_option("--popularity", options->popularity, "zipf or lognormal")
      ->capture_default_str()
      ->check(CLI::IsMember({"zipf", "lognormal"}));
  synth
      ->add_option("--hot-ratio", spec.hot_ratio,
                   "Busiest expert's share over the mean (1: uniform)")
      ->capture_default_str();
  synth->add_option("--drift", spec.drift_per_step, "Popularity positions swapped per step")
      ->capture_default_str();
  synth
      ->add_option("--layer-correlation", spec.layer_correlation,
                   "Share of the popularity order the next layer keeps")
      ->capture_default_str();
  synth->add_option("--rank-variation", spec.rank_variation, "Log-normal sigma of per-rank noise")
      ->capture_default_str();
  synth->add_option("--seed", spec.seed)->capture_default_str();
  synth->callback([options] {
    naming_flags({{"num_experts", "--experts"},
                  {"top_k", "--top-k"},
                  {"num_ranks", "--ranks"},
                  {"gpus_per_node", "--gpus-per-node"},
                  {"layers", "--layers"},
                  {"microbatches", "--microbatches"},
                  {"steps", "--steps"},
                  {"tokens_per_rank", "--tokens-per-rank"},
                  // The trace's own checks: every value of its metadata is a flag here.
                  {"metadata.num_experts", "--experts"},
                  {"metadata.num_ranks", "--ranks"},
                  {"metadata.num_layers", "--layers"},
                  {"metadata.microbatches", "--microbatches"},
                  {"metadata.steps", "--steps"},
                  {"metadata.tokens_per_rank", "--tokens-per-rank"},
                  {"hot_ratio", "--hot-ratio"},
                  {"drift_per_step", "--drift"},
                  {"layer_correlation", "--layer-correlation"},
                  {"rank_variation", "--rank-variation"}},
                 [&] { run_synth(*options); });
  });

  CLI::App* import_command =
      trace->add_subcommand("import", "Convert recorded routing data to a trace");
  auto import_options = std::make_shared<ImportOptions>();
  ImportOptions& io = *import_options;
  import_command
      ->add_option("--format", io.format,
                   "esft, flame-csv, topk-csv, topk-npy, sglang-stats or jsonl")
      ->required()
      ->check(
          CLI::IsMember({"esft", "flame-csv", "topk-csv", "topk-npy", "sglang-stats", "jsonl"}));
  import_command
      ->add_option("--input", io.input,
                   "esft: a directory; flame-csv, topk-csv, topk-npy: a directory, or one file; "
                   "sglang-stats: a file; "
                   "jsonl: a file, or a directory of .jsonl files (one a rank, say)")
      ->required();
  // Which formats each shaping option applies to: given for another format, it is refused
  // rather than ignored (the trace would not have the shape the user asked for). The per-token
  // formats are packed into ranks; with sglang-stats, the formats the import puts onto ranks
  // (jsonl's lines name their ranks and microbatches).
  const std::vector<std::string> per_token = {"esft", "flame-csv", "topk-csv", "topk-npy"};
  const std::vector<std::string> onto_ranks = {"esft", "flame-csv", "topk-csv", "topk-npy",
                                               "sglang-stats"};
  auto applicable =
      std::make_shared<std::vector<std::pair<CLI::Option*, std::vector<std::string>>>>();
  auto only_for = [&](CLI::Option* option, const std::vector<std::string>& formats) {
    applicable->push_back({option, formats});
    return option;
  };
  only_for(import_command->add_option("--packing", io.packing,
                                      "contiguous, round-robin or random (per-token formats)"),
           per_token)
      ->capture_default_str();
  only_for(import_command->add_option(
               "--unit-tokens", io.unit_tokens,
               "Pack units of this many tokens (0: whole sequences where known, else 1)"),
           per_token)
      ->capture_default_str();
  only_for(import_command->add_option("--bootstrap", io.bootstrap,
                                      "Resample this many units with replacement first"),
           per_token)
      ->capture_default_str();
  import_command->add_option("--out", io.out, "Trace directory to create")->required();
  only_for(import_command->add_option("--ranks", io.shape.num_ranks,
                                      "Ranks to pack onto (all formats but jsonl)"),
           onto_ranks)
      ->capture_default_str();
  import_command->add_option("--gpus-per-node", io.shape.gpus_per_node)->capture_default_str();
  CLI::Option* const tokens_per_rank =
      only_for(import_command->add_option(
                   "--tokens-per-rank", io.shape.tokens_per_rank,
                   "Per microbatch (all formats but jsonl; default: 64, what the small recorded "
                   "samples fill; sglang-stats, which samples any number: " +
                       std::to_string(kSampledTokensPerRank) + ")"),
               onto_ranks);
  only_for(import_command->add_option("--microbatches-per-step", io.shape.microbatches_per_step,
                                      "All formats but jsonl"),
           onto_ranks)
      ->capture_default_str();
  only_for(import_command->add_option(
               "--layers", io.layers,
               "MoE layers (esft; default: every expert_weights_<L>.txt, L from 1, or 0)"),
           {"esft"})
      ->check(CLI::Range(1, 1 << 20));
  only_for(import_command->add_option("--experts", io.experts,
                                      "Experts (per-token formats; default: flame-csv's header, "
                                      "esft's model's 64; topk-csv and topk-npy need it)"),
           per_token)
      ->check(CLI::Range(1, 1 << 20));
  import_command
      ->add_option("--top-k", io.top_k,
                   "Experts a token picks (default: per-token files' first token, esft's model's "
                   "6, jsonl lines' top_k; else the model preset with the data's expert count)")
      ->check(CLI::Range(1, 1 << 16));
  only_for(import_command->add_option(
               "--steps", io.steps,
               "Steps to sample (sglang-stats; default: " + std::to_string(kSampledSteps) +
                   " from run totals, every pass from per-pass counts)"),
           {"sglang-stats"})
      ->check(CLI::Range(1, 1 << 30));
  only_for(import_command->add_option("--seed", io.seed,
                                      "Seed of sampling, shuffling and bootstrapping (all formats "
                                      "but jsonl)"),
           onto_ranks)
      ->capture_default_str();
  only_for(import_command->add_option("--concentration", io.concentration,
                                      "sglang-stats: Dirichlet concentration of microbatch "
                                      "variation (0: plain multinomial)"),
           {"sglang-stats"})
      ->capture_default_str();
  import_command->callback([import_options, applicable, tokens_per_rank] {
    for (const auto& [option, formats] : *applicable) {
      if (option->count() == 0 ||
          std::find(formats.begin(), formats.end(), import_options->format) != formats.end()) {
        continue;
      }
      throw InputError(option->get_name(), "does not apply to --format " + import_options->format +
                                               " (only to " + join_names(formats) + ")");
    }
    if (tokens_per_rank->count() == 0 && import_options->format == "sglang-stats") {
      import_options->shape.tokens_per_rank = kSampledTokensPerRank;
    }
    naming_flags({{"num_ranks", "--ranks"},
                  {"gpus_per_node", "--gpus-per-node"},
                  {"tokens_per_rank", "--tokens-per-rank"},
                  {"microbatches_per_step", "--microbatches-per-step"},
                  {"unit_tokens", "--unit-tokens"},
                  {"bootstrap_units", "--bootstrap"},
                  {"num_layers", "--layers"},
                  {"num_experts", "--experts"},
                  {"top_k", "--top-k"},
                  {"steps", "--steps"},
                  {"concentration", "--concentration"},
                  // Of the trace's own checks, only these values come from flags in every format
                  // (jsonl takes ranks, steps and layers from its lines).
                  {"metadata.gpus_per_node", "--gpus-per-node"},
                  {"metadata.top_k", "--top-k"}},
                 [&] { run_import(*import_options); });
  });

  CLI::App* slice = trace->add_subcommand("slice", "Write a trace of a step range and some layers");
  auto slice_in = std::make_shared<std::string>();
  auto slice_out = std::make_shared<std::string>();
  auto slice_steps = std::make_shared<std::string>(":");
  auto slice_layers = std::make_shared<std::vector<int>>();
  slice->add_option("trace", *slice_in, "Trace directory")->required();
  slice->add_option("--out", *slice_out, "Trace directory to create")->required();
  slice->add_option("--steps", *slice_steps, "a:b (exclusive end), a: or :b")
      ->capture_default_str();
  slice->add_option("--layers", *slice_layers, "Layer ids to keep, ascending (default: all)")
      ->delimiter(',');
  slice->callback([slice_in, slice_out, slice_steps, slice_layers] {
    TraceSlice range;
    std::int64_t records = 0;
    naming_flags({{"steps", "--steps"}, {"layers", "--layers"}}, [&] {
      parse_step_range(*slice_steps, &range);
      range.layers = *slice_layers;
      // Sliced first: a stream chain prints its left part before a call on its right throws.
      records = slice_trace(*slice_in, range, *slice_out);
    });
    std::cout << *slice_out << ": " << records << " records\n";
  });

  CLI::App* info = trace->add_subcommand("info", "Shape, metadata and per-layer skew of a trace");
  auto info_path = std::make_shared<std::string>();
  auto info_json = std::make_shared<bool>(false);
  info->add_option("trace", *info_path, "Trace directory")->required();
  info->add_flag("--json", *info_json, "Print JSON");
  info->callback([info_path, info_json] { run_info(*info_path, *info_json); });

  CLI::App* validate = trace->add_subcommand("validate", "Check every record of a trace");
  auto validate_path = std::make_shared<std::string>();
  validate->add_option("trace", *validate_path, "Trace directory")->required();
  validate->callback([validate_path] {
    // Before printing: it may throw.
    const std::int64_t records = validate_trace(*validate_path, ProgressDisplay::kTerminal);
    std::cout << *validate_path << ": valid, " << records << " records\n";
  });
}

}  // namespace topoep
