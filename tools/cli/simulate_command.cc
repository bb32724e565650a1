#include "tools/cli/simulate_command.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>

#include "common/flag_errors.h"
#include "common/parallel_tasks.h"
#include "common/text_list.h"
#include "models/model_json.h"
#include "sim/deepep_dispatch.h"
#include "sim/home_layout_check.h"
#include "sim/memory_bound_kernels.h"
#include "sim/pipeline_schedule.h"
#include "sim/replay.h"
#include "sim/simulation.h"
#include "solver/input_error.h"
#include "solver/topoep_layer_io.h"
#include "tools/cli/gemm_flags.h"
#include "tools/cli/kept_moves_output.h"
#include "tools/cli/simulation_table.h"
#include "tools/cli/table.h"
#include "tools/cli/topology_flags.h"
#include "topologies/topology_presets.h"
#include "traces/trace_reader.h"

namespace topoep {
namespace {

struct SimulateOptions {
  std::string trace;
  TopologyFlags cluster;  // no --topology: the preset with the trace's ranks as GPUs
  std::string model;      // empty: the preset the trace's experts and top-k imply
  std::string planners = "topoep,eplb,eplb-microbatch,shadowing,static,ideal";
  int slots = 1;
  bool uneven_homes = false;
  bool fp8_gemms = false;
  int threads = hardware_threads();
  std::string out;
  std::string timeline;
  int timeline_step = 0;
  bool rank_loads = false;
  bool check = false;
  std::string explain;             // STEP:MICROBATCH:LAYER[:GROUP], or empty
  int advice_max_activations = 0;  // 0: what the run's layout holds
  double advice_max_gb = 0;        // 0: no cap on what the busiest GPU holds
  std::string dispatcher = dispatcher_name(Dispatcher::kPerAssignment);
  std::string dense_sync = dense_sync_name(DenseSync::kAllReduce);
  std::string pipeline_schedule = pipeline_schedule_name(PipelineSchedule::kOneFOneB);
  std::string eplb_groups = eplb_groups_name(kEplbGroupsPerNode);
  SimOptions sim;
  PlannerOptions planner;
};

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  std::stringstream stream(text);
  for (std::string name; std::getline(stream, name, ',');) {
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

// "STEP:MICROBATCH:LAYER[:GROUP]" as a record; throws InputError("explain") for anything else.
RecordKey parse_record_key(const std::string& text) {
  RecordKey key;
  char end = 0;
  const bool read = std::count(text.begin(), text.end(), ':') == 2
                        ? std::sscanf(text.c_str(), "%d:%d:%d%c", &key.step, &key.microbatch,
                                      &key.layer, &end) == 3
                        : std::sscanf(text.c_str(), "%d:%d:%d:%d%c", &key.step, &key.microbatch,
                                      &key.layer, &key.group, &end) == 4;
  if (!read || key.step < 0) {
    throw InputError("explain",
                     "expects STEP:MICROBATCH:LAYER, or STEP:MICROBATCH:LAYER:GROUP where the "
                     "data-parallel groups route apart (e.g. 0:1:5), got '" +
                         text + "'");
  }
  return key;
}

// With pipeline stages: the --pipeline-layers (each chunk's) that the run's records predict
// the shortest step for, each planner's.
void print_pipeline_advice(const SimulationResult& result, const SimConfig& config,
                           std::ostream& out) {
  bool header = false;
  for (std::size_t p = 0; p < result.pipeline_advice.size(); ++p) {
    if (!result.pipeline_advice[p]) continue;
    const PipelineLayoutAdvice& advice = *result.pipeline_advice[p];
    if (!header) {
      out << "\nStage layouts these records predict the shortest step for (the schedule over the "
             "mean\nstep; sim/README.md, \"Pipeline stages\"), whose busiest stage holds at most "
          << advice.max_activations << "\nlayer-microbatches of activations ("
          << (advice.max_activations == advice.activations_now ? "as this run's layout does"
                                                               : "--advice-max-activations")
          << ")"
          << (advice.max_gb > 0 ? ",\nand whose busiest GPU would hold at most " +
                                      format_fixed(advice.max_gb, 2) + " GB (--advice-max-gb)"
                                : std::string())
          << ":\n";
      header = true;
    }
    const std::string memory_cap =
        advice.max_gb > 0
            ? " and whose busiest GPU would hold at most " + format_fixed(advice.max_gb, 2) +
                  " GB (this run's layout: " +
                  format_fixed(static_cast<double>(advice.memory_now) / 1e9, 2) + " GB)"
            : "";
    if (advice.layers.empty()) {
      out << "  " << config.planners[p] << ": none found whose busiest stage holds at most "
          << advice.max_activations
          << " layer-microbatches of activations (this run's: " << advice.activations_now << ")"
          << memory_cap << "\n";
      continue;
    }
    // Below a thousandth the run's layout is as good: the prediction is not that exact. A run
    // over the cap takes whatever fits, slower or not.
    const Picoseconds saved = advice.predicted_now - advice.predicted_advised;
    const bool over_cap =
        advice.activations_now > advice.max_activations ||
        (advice.max_gb > 0 && static_cast<double>(advice.memory_now) > advice.max_gb * 1e9);
    if (saved * 1000 >= advice.predicted_now || over_cap) {
      const Picoseconds change = saved < 0 ? -saved : saved;
      char cut[64];
      std::snprintf(cut, sizeof cut, "%.1f%% (%.1f ms)",
                    100.0 * static_cast<double>(change) / static_cast<double>(advice.predicted_now),
                    static_cast<double>(change) / 1e9);
      out << "  " << config.planners[p] << ": --pipeline-layers "
          << join_numbers(advice.layers, ",") << ", a step predicted " << cut
          << (saved < 0 ? " longer" : " shorter")
          << " than this run's layout;\n    its busiest stage holds " << advice.activations_advised
          << " layer-microbatches of activations (this run's: " << advice.activations_now
          << "),\n    its busiest GPU would hold about "
          << format_fixed(static_cast<double>(advice.memory_advised) / 1e9, 2)
          << " GB (this run's layout: "
          << format_fixed(static_cast<double>(advice.memory_now) / 1e9, 2) << ")\n";
    } else {
      out << "  " << config.planners[p] << ": this run's layout (none found 0.1% shorter)\n";
    }
  }
}

void run_simulate(const SimulateOptions& options) {
  SimulationRequest request;
  request.trace = options.trace;
  // What is not given is the one preset the trace's shape implies.
  std::optional<TraceMetadata> shape;
  if (options.model.empty() || options.cluster.topology.empty()) {
    shape = TraceReader(options.trace).metadata();
  }
  request.config.topology =
      shape ? load_topology_flags(options.cluster, shape->num_ranks, shape->gpus_per_node)
            : load_topology_flags(options.cluster, 0);
  request.config.model = load_model(
      options.model.empty() ? implied_model_preset(shape->num_experts, shape->top_k, "--model")
                            : options.model);
  if (options.fp8_gemms) {
    request.config.model.fp8_gemms = true;
    check_fp8_gemms(request.config.topology);
  }
  request.config.options = options.sim;
  parse_dispatcher(options.dispatcher, &request.config.options.dispatcher);  // checked: IsMember
  parse_dense_sync(options.dense_sync, &request.config.options.dense_sync);  // checked: IsMember
  parse_pipeline_schedule(options.pipeline_schedule,
                          &request.config.options.pipeline_schedule);  // checked: IsMember
  // A list of the stages' (chunks') layers says how many stages there are.
  const std::vector<int>& staged = options.sim.pipeline_layers;
  if (!staged.empty() && options.sim.pipeline_stages == 1) {
    const int chunks = request.config.options.chunks_per_stage();
    if (chunks < 1 || staged.size() % static_cast<std::size_t>(chunks) != 0) {
      throw InputError("--pipeline-layers",
                       "names " + std::to_string(staged.size()) + " chunks, not a multiple of " +
                           (request.config.options.pipeline_schedule == PipelineSchedule::kDualPipeV
                                ? std::string("DualPipeV's 2 a stage")
                                : "--virtual-stages " + std::to_string(chunks)));
    }
    request.config.options.pipeline_stages = static_cast<int>(staged.size()) / chunks;
  }
  if (options.advice_max_activations != 0 && request.config.options.pipeline_stages == 1) {
    throw InputError("--advice-max-activations",
                     "caps the layout advice of pipeline stages: give --pipeline-stages or "
                     "--pipeline-layers");
  }
  request.advice_max_activations = options.advice_max_activations;
  if (options.advice_max_gb != 0 && request.config.options.pipeline_stages == 1) {
    throw InputError("--advice-max-gb",
                     "caps the layout advice of pipeline stages: give --pipeline-stages or "
                     "--pipeline-layers");
  }
  request.advice_max_gb = options.advice_max_gb;
  request.config.planner_options = options.planner;
  if (!parse_eplb_groups(options.eplb_groups, &request.config.planner_options.eplb_groups)) {
    throw InputError("--eplb-groups", "must be 'nodes', 'model' or a count of groups, got '" +
                                          options.eplb_groups + "'");
  }
  request.config.planners = split_names(options.planners);
  request.config.slots_per_rank = options.slots;
  request.config.homes = options.uneven_homes ? HomeLayout::kUneven : HomeLayout::kEven;
  request.config.threads = options.threads;
  request.config.check_plans = options.check;
  request.config.progress = ProgressDisplay::kTerminal;
  request.out_dir = options.out;
  request.timeline = options.timeline;
  request.rank_loads = options.rank_loads;
  request.timeline_step = options.timeline_step;
  if (!options.explain.empty()) request.config.explain = parse_record_key(options.explain);
  const SimulationResult result = run_simulation(request);
  const TraceMetadata& m = result.metadata;
  std::cout << "Replayed " << result.records << " records (" << m.steps << " steps x "
            << m.microbatches << " microbatches x " << m.num_layers << " MoE layers) of "
            << options.trace << "\non " << request.config.topology.name << " ("
            << request.config.topology.nodes << " x " << request.config.topology.gpus_per_node
            << " GPUs) with " << request.config.model.name << ", S = " << options.slots
            << (request.config.options.dispatcher == Dispatcher::kDeepEP
                    ? ", DeepEP's dispatch (distinct tokens estimated from the counts" +
                          (expert_groups(request.config.model).limited()
                               ? ", a token's experts in at most " +
                                     std::to_string(request.config.model.expert_groups_per_token) +
                                     " of " + std::to_string(request.config.model.expert_groups) +
                                     " groups"
                               : std::string()) +
                          ")"
                    : std::string())
            << "\n";
  const SimOptions& sim = request.config.options;
  if (sim.mtp_layers > 0) {
    const ModelSpec& model = request.config.model;
    std::cout << "Training " << sim.mtp_layers << " multi-token-prediction module"
              << (sim.mtp_layers > 1 ? "s" : "") << " (--mtp-layers): the trace's " << m.num_layers
              << (m.num_layers > 1 ? " layers stand" : " layer stands") << " for "
              << model.routed_layers(sim.mtp_layers) << " routed layers, the model's "
              << model.moe_layers << " and the modules' " << sim.mtp_layers << "\n";
  }
  if (sim.memory_bound_kernels) {
    const MemoryBoundBytes bytes = memory_bound_bytes(request.config.model, sim);
    auto kb = [](double b) { return format_fixed(b / 1e3, 1); };
    std::cout << "Memory-bound kernels at the HBM's "
              << request.config.topology.gpu.hbm_bandwidth_gb_per_s
              << " GB/s (--memory-bound-kernels), forward and backward: "
              << kb(bytes.expert_assignment) << " KB a token assignment at its expert, "
              << kb(bytes.moe_layer) << " KB a token of each MoE layer's dense part\n";
  }
  if (sim.pipeline_stages > 1) {
    // With the all-to-alls behind compute the 1F1B schedules run combined (pipeline_schedule.h).
    const std::string one_f_one_b = sim.a2a_overlap_fraction > 0 ? "combined 1F1B" : "1F1B";
    const std::string layers =
        join_numbers(stage_layer_counts(m.num_layers, sim.pipeline_chunks(), sim.pipeline_layers));
    const int gpus = request.config.topology.num_gpus();
    if (sim.pipeline_schedule == PipelineSchedule::kDualPipeV) {
      std::cout << sim.pipeline_stages << " pipeline stages run by DualPipeV: chunks of " << layers
                << " MoE layers as a V, stage s holding chunks s and "
                << 2 * sim.pipeline_stages - 1 << " - s on its own " << gpus << " GPUs\n";
    } else if (sim.pipeline_schedule == PipelineSchedule::kDualPipe) {
      std::cout << sim.pipeline_stages << " pipeline stages run by DualPipe: chunks of " << layers
                << " MoE layers, stage s holding chunks s and " << sim.pipeline_stages - 1
                << " - s (two copies of each) on its own " << gpus
                << " GPUs; half the microbatches enter at each end\n";
    } else if (sim.virtual_stages > 1) {
      std::cout << sim.pipeline_stages << " pipeline stages of " << sim.virtual_stages
                << " chunks each, chunks of " << layers << " MoE layers (chunk c on stage c mod "
                << sim.pipeline_stages << "), each stage on its own " << gpus
                << " GPUs, run by interleaved " << one_f_one_b << "\n";
    } else {
      std::cout << sim.pipeline_stages << " pipeline stages of " << layers
                << " MoE layers, each on its own " << gpus << " GPUs, run by " << one_f_one_b
                << "\n";
    }
    std::cout << "(the MoE and phase times below sum over the stages; a step is the schedule's "
                 "span)\n";
    const auto peaks = result.run.at("pipeline_peak_activations").get<std::vector<int>>();
    std::cout << "Activations each stage holds at its peak, in layer-microbatches: "
              << join_numbers(peaks) << "\n";
  }
  const int groups = request.config.options.data_parallel;
  if (groups > 1) {
    std::cout << groups << " data-parallel groups, "
              << (routing_groups(request.config, m) > 1
                      ? "each routing its own " +
                            std::to_string(request.config.topology.num_gpus()) +
                            " of the trace's " + std::to_string(m.num_ranks) +
                            " ranks: each planner's step waits for its slowest group, whose "
                            "records it reports"
                      : std::string("routing alike: the trace stands for each"))
              << "\n";
  }
  std::cout << "\n";
  print_simulation_table(result.summary, std::cout);
  print_gpu_memory(result.summary, request.config, std::cout);
  print_planner_notes(result.summary, m.steps, request.config, std::cout);
  const double overlap = request.config.options.a2a_overlap_fraction;
  if (overlap > 0) {
    std::cout << "\nNote: --a2a-overlap " << overlap
              << " pairs each microbatch's forward with the backward of the one\nbefore"
              << (m.microbatches == 1
                      ? "; this trace has one microbatch a step, so none of its all-to-alls "
                        "ran\nbehind compute (record several, or import with "
                        "--microbatches-per-step).\n"
                  : request.config.options.pipeline_stages > 1
                      ? " (sim/README.md, \"All-to-alls behind compute\"); the pipeline "
                        "stages run\ncombined schedules, where each stage's warm-up "
                        "forwards and drain backwards\nhave no partner and take back what "
                        "their records hid.\n"
                      : " (sim/README.md, \"All-to-alls behind compute\"); a step's first "
                        "forward and\nlast backward have no partner.\n");
    if (sim.pipeline_stages > 1 && sim.virtual_stages == 1 &&
        sim.pipeline_schedule == PipelineSchedule::kOneFOneB) {
      std::cout << "Megatron-LM runs combined 1F1B across pipeline stages only with virtual "
                   "stages; with one\nchunk a stage the simulator runs the same rule, whose "
                   "warm-up holds about twice\n1F1B's activations.\n";
    }
  }
  print_pipeline_advice(result, request.config, std::cout);
  if (result.explained) {
    const ExplainedRecord& e = *result.explained;
    const std::string record =
        "TopoEP on step " + std::to_string(e.record.step) + ", microbatch " +
        std::to_string(e.record.microbatch) + ", layer " + std::to_string(e.record.layer) +
        (routing_groups(request.config, m) > 1 ? " of group " + std::to_string(e.record.group)
                                               : "");
    print_kept_moves(e.kept, record, request.config.topology.gpus_per_node, std::cout);
    if (e.overruled) {
      std::cout << "The simulator ran the static plan instead: it prices this plan's MoE time "
                   "higher (sim/README.md, the per-instance GEMM curve).\n";
    }
  }
  if (options.check) {
    const auto& names = request.config.planners;
    const auto planning = std::count_if(names.begin(), names.end(),
                                        [](const std::string& name) { return name != "ideal"; });
    std::cout << "\n--check: all " << result.records * planning
              << " plans valid, and priced with the loads and dispatch bytes their routes imply\n";
  }
  if (!options.out.empty()) {
    std::cout << "\nWrote " << options.out << "/summary.json, per_layer.csv, per_step.csv"
              << (options.rank_loads ? ", rank_loads.csv" : "") << "\n";
    if (result.removed_stale_rank_loads) {
      std::cout << "Removed " << options.out
                << "/rank_loads.csv, an earlier run's (this run has none: --rank-loads)\n";
    }
  }
  if (!options.timeline.empty()) {
    std::cout << "Wrote " << options.timeline << " (step " << options.timeline_step
              << "; open it in ui.perfetto.dev)\n";
  }
}

// An option that takes one of `choices` (each a name its enum's parser reads).
void add_choice(CLI::App* command, const std::string& flag, std::string& target,
                const std::string& help, const std::vector<std::string>& choices) {
  command->add_option(flag, target, help)->check(CLI::IsMember(choices))->capture_default_str();
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  CLI::App* simulate =
      app.add_subcommand("simulate", "Replay a trace through planners and the cluster model");
  auto o = std::make_shared<SimulateOptions>();
  simulate->add_option("--trace", o->trace, "Trace directory (topoep trace format)")->required();
  CLI::Option* topology = simulate->add_option(
      "--topology", o->cluster.topology,
      "Preset or JSON file (default: the preset with the trace's ranks as GPUs)");
  add_reshape_flags(simulate, o->cluster, topology);
  simulate->add_option("--model", o->model,
                       "Model preset or JSON file (default: the preset with the trace's experts "
                       "and top-k)");
  simulate
      ->add_option("--planners", o->planners,
                   "Comma-separated: topoep, eplb, eplb-microbatch, shadowing, static, ideal, "
                   "and the ablations topoep-flat (TopoEP blind to the NVLink/IB hierarchy) and "
                   "topoep-balance (TopoEP weighing compute alone: every byte free to it)")
      ->capture_default_str();
  simulate->add_option("--slots", o->slots, "Spare expert slots per GPU (S)")
      ->capture_default_str();
  simulate->add_flag("--uneven-homes", o->uneven_homes, kUnevenHomesHelp);
  simulate->add_flag("--fp8-gemms", o->fp8_gemms, kFp8GemmsHelp);
  simulate->add_flag("--recompute-moe-act", o->sim.recompute_moe_activation,
                     "The experts' gated activation is recomputed in the backward (Megatron-LM's "
                     "--recompute-modules moe_act; DeepSeek-V3 recomputes its SwiGLU): the expert "
                     "activations a GPU holds are counted without its output");
  simulate->add_flag("--recompute-layernorm", o->sim.recompute_layernorm,
                     "The norms' outputs are recomputed in the backward (Megatron-LM's "
                     "--recompute-modules layernorm; DeepSeek-V3 recomputes its RMSNorms): the "
                     "dense activations a GPU holds are counted without them");
  simulate->add_flag("--recompute-mla-up-proj", o->sim.recompute_mla_up_proj,
                     "MLA's up-projections are recomputed in the backward (Megatron-LM's "
                     "--recompute-modules mla_up_proj; DeepSeek-V3 does): the dense activations "
                     "are counted without the query, keys and values, and each dense backward "
                     "reruns those GEMMs first. MLA models only");
  simulate
      ->add_option("--mtp-layers", o->sim.mtp_layers,
                   "Multi-token-prediction modules trained with the model (Megatron-LM's "
                   "--mtp-num-layers; DeepSeek-V3 trains 1): each a projection, a MoE transformer "
                   "block and another pass through the output head, on the last pipeline stage. "
                   "The trace's layers then stand for the MoE layers and the modules' blocks: a "
                   "whole trace has one more layer a module, last")
      ->capture_default_str();
  simulate->add_flag("--memory-bound-kernels", o->sim.memory_bound_kernels,
                     "The norms, residual adds, RoPE, router, gated activations, the tokens' "
                     "permutations, the embedding lookup and the loss's softmax take their HBM "
                     "bytes' time at the GPU's HBM bandwidth: each expert's with its token "
                     "assignments (the planners weigh it), the rest with the dense work. Off: "
                     "only the GEMMs and the attention core take time");
  simulate->add_option("--threads", o->threads, "Host threads (results do not depend on it)")
      ->capture_default_str();
  simulate->add_option("--out", o->out, "Write summary.json, per_layer.csv, per_step.csv here");
  CLI::Option* timeline =
      simulate->add_option("--timeline", o->timeline, "Write one step as Chrome trace JSON here");
  simulate->add_flag("--rank-loads", o->rank_loads,
                     "Also write rank_loads.csv (tokens per GPU of every record) to --out");
  simulate->add_option("--timeline-step", o->timeline_step, "The step --timeline draws")
      ->needs(timeline)
      ->capture_default_str();
  simulate->add_option("--explain", o->explain,
                       "STEP:MICROBATCH:LAYER[:GROUP]: list the moves TopoEP's plan keeps on "
                       "that record (of that data-parallel group where the groups route apart; "
                       "default 0)");
  simulate->add_flag(
      "--check", o->check,
      "Validate every plan that runs (and the loads and bytes it was priced with); stop at "
      "the first invalid one");
  simulate
      ->add_option("--weight-overlap", o->sim.weight_overlap_fraction,
                   "Fraction of the dense compute that hides replica weight transfers")
      ->capture_default_str();
  simulate
      ->add_option("--gradient-overlap", o->sim.gradient_overlap_fraction,
                   "Fraction of the attention backward that hides the replica gradient reduction")
      ->capture_default_str();
  simulate
      ->add_option("--a2a-overlap", o->sim.a2a_overlap_fraction,
                   "Fraction of the token all-to-alls that run behind another microbatch's "
                   "compute (Megatron-LM's --overlap-moe-expert-parallel-comm, DualPipe): the "
                   "forward of microbatch m + 1 pairs with the backward of m (pipeline stages "
                   "run Megatron-LM's combined 1F1B); 0: none")
      ->capture_default_str();
  simulate
      ->add_option("--pipeline-layers", o->sim.pipeline_layers,
                   "MoE layers on each pipeline stage, first to last (e.g. 13,15,15,15), where "
                   "not an even split; sets the stages")
      ->delimiter(',');
  simulate
      ->add_option("--pipeline-stages", o->sim.pipeline_stages,
                   "Pipeline stages the MoE layers are split into, each on its own copy of the "
                   "topology's GPUs, run by 1F1B (Megatron-LM's --pipeline-model-parallel-size)")
      ->capture_default_str();
  simulate
      ->add_option("--advice-max-activations", o->advice_max_activations,
                   "The stage-layout advice considers only layouts whose busiest stage holds "
                   "at most this many layer-microbatches of activations; 0: what this run's "
                   "layout holds")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  simulate
      ->add_option("--advice-max-gb", o->advice_max_gb,
                   "The stage-layout advice considers only layouts whose busiest GPU would hold "
                   "at most this many GB (model state, spare slots, dense activations, expert "
                   "activations at this run's rate a layer-microbatch and its most token "
                   "buffers); 0: no such cap")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  simulate
      ->add_option("--virtual-stages", o->sim.virtual_stages,
                   "Chunks each pipeline stage holds, run by interleaved 1F1B (Megatron-LM's "
                   "--num-virtual-stages-per-pipeline-rank); --pipeline-layers then lists "
                   "every chunk's layers")
      ->capture_default_str();
  add_choice(simulate, "--pipeline-schedule", o->pipeline_schedule,
             "1f1b: Megatron-LM's 1F1B (interleaved with --virtual-stages); dualpipe: "
             "DeepSeek-V3's DualPipe, half the microbatches entering at each end, each stage "
             "also holding its mirror's layers (needs an even --pipeline-stages and at least "
             "2 x stages microbatches a step); dualpipev: DualPipe cut in half, 2 chunks a "
             "stage as a V, one copy of the layers (at least 2 x stages microbatches)",
             {pipeline_schedule_name(PipelineSchedule::kOneFOneB),
              pipeline_schedule_name(PipelineSchedule::kDualPipe),
              pipeline_schedule_name(PipelineSchedule::kDualPipeV)});
  simulate
      ->add_option("--dense-grad-bytes", o->sim.dense_grad_bytes,
                   "Bytes per parameter of the gradients' data-parallel sync "
                   "(2: bf16, Megatron-LM's --grad-reduce-in-bf16; 4: fp32, its default for bf16 "
                   "training; 0: leave the sync out of the step). The gradient buffers a GPU "
                   "holds are counted this wide")
      ->capture_default_str();
  simulate
      ->add_option("--optimizer-state-bytes", o->sim.optimizer_state_bytes_per_param,
                   "Bytes of optimizer state a GPU keeps per parameter it updates, for the memory "
                   "it holds (12: AdamW's fp32 master weight and moments; 8: bf16 moments, as "
                   "DeepSeek-V3 trained)")
      ->capture_default_str();
  simulate
      ->add_option("--data-parallel", o->sim.data_parallel,
                   "Copies of the expert-parallel group training data-parallel: the dense sync "
                   "spans them all and each GPU syncs its home experts' gradients with its peers "
                   "over IB. A trace of the topology's GPUs stands for every group; one of D "
                   "times them holds each group's own routing (a step waits for the slowest)")
      ->capture_default_str();
  add_choice(
      simulate, "--dense-sync", o->dense_sync,
      "How the dense parameters sync: allreduce (plain data parallelism) or distributed "
      "(Megatron-LM's distributed optimizer, ZeRO-1: reduce-scatter, 1/R of the "
      "optimizer, all-gather before the next forward)",
      {dense_sync_name(DenseSync::kAllReduce), dense_sync_name(DenseSync::kDistributedOptimizer)});
  add_choice(simulate, "--dispatcher", o->dispatcher,
             "alltoall: every token-expert assignment sent on its own (Megatron-LM's "
             "all-to-all); deepep: a token once per node over IB, then per GPU over NVLink "
             "(sim/README.md, Dispatchers)",
             {dispatcher_name(Dispatcher::kPerAssignment), dispatcher_name(Dispatcher::kDeepEP)});
  simulate
      ->add_option("--topoep-solve-us", o->planner.topoep_solve_us,
                   "TopoEP's GPU solve time per layer, on the critical path")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  simulate
      ->add_option("--topoep-replica-uses", o->planner.topoep_replica_uses,
                   "Microbatches a new replica's step-end gradient is shared over, at most")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  simulate
      ->add_option("--topoep-ib-slack", o->planner.topoep_ib_load_slack,
                   "How far above the mean load (a fraction of it) TopoEP may raise a GPU's "
                   "compute to save IB time (default: " +
                       format_fixed(kTopoepIbSlackPerAssignment, 2) + "; " +
                       format_fixed(kTopoepIbSlackNodeDeduplicated, 2) +
                       " with --dispatcher deepep)")
      ->check(CLI::Range(0.0, 1.0));
  simulate
      ->add_option("--topoep-ib-opened-run", o->planner.topoep_ib_opened_run,
                   "1: TopoEP may search a second run with each GPU's first replica over IB "
                   "prepaid, 0: not (default: 1; 0 with --dispatcher deepep)")
      ->check(CLI::Range(0, 1));
  simulate
      ->add_option("--topoep-max-moves", o->planner.topoep_max_moves,
                   "Cap on the moves of each TopoEP search (0: 4 R (S + 1))")
      ->check(CLI::Range(0, static_cast<int>(kMaxMovesCap)))
      ->capture_default_str();
  simulate
      ->add_option("--host-roundtrip-us", o->planner.host_roundtrip_us,
                   "Device-to-host copy and sync of each plan made on the host (EPLB's, "
                   "shadowing's)")
      ->check(CLI::Range(0.0, 1e6))
      ->capture_default_str();
  simulate->add_option("--eplb-period", o->planner.eplb_period_steps, "EPLB replans every K steps")
      ->capture_default_str();
  simulate
      ->add_option("--eplb-window", o->planner.eplb_window_steps,
                   "EPLB plans from the loads of the last W steps")
      ->capture_default_str();
  simulate
      ->add_option("--eplb-groups", o->eplb_groups,
                   "EPLB's expert groups (num_groups): nodes (one a node: experts stay on their "
                   "home nodes), model (the model's expert_groups, as vLLM and SGLang pass them; "
                   "one where it has none) or a count")
      ->capture_default_str();
  // A planner option given while --planners lacks every planner that reads it would change
  // nothing: the run would not be the one asked for, so it is refused.
  std::vector<std::pair<CLI::Option*, std::vector<std::string>>> owned;
  for (const auto& [flag, field] : {std::pair{"--topoep-solve-us", "topoep_solve_us"},
                                    std::pair{"--topoep-replica-uses", "topoep_replica_uses"},
                                    std::pair{"--topoep-ib-slack", "topoep_ib_load_slack"},
                                    std::pair{"--topoep-ib-opened-run", "topoep_ib_opened_run"},
                                    std::pair{"--topoep-max-moves", "topoep_max_moves"},
                                    std::pair{"--host-roundtrip-us", "host_roundtrip_us"},
                                    std::pair{"--eplb-period", "eplb_period_steps"},
                                    std::pair{"--eplb-window", "eplb_window_steps"},
                                    std::pair{"--eplb-groups", "eplb_groups"}}) {
    owned.emplace_back(simulate->get_option(flag), planners_reading_option(field));
  }
  simulate->callback([o, owned] {
    const std::vector<std::string> planners = split_names(o->planners);
    for (const auto& [option, readers] : owned) {
      const bool runs = std::any_of(readers.begin(), readers.end(), [&](const std::string& name) {
        return std::find(planners.begin(), planners.end(), name) != planners.end();
      });
      if (option->count() > 0 && !runs) {
        throw InputError(option->get_name(), "applies to the " + spoken_list(readers) +
                                                 (readers.size() > 1 ? " planners" : " planner") +
                                                 ", which --planners does not list");
      }
    }
    naming_flags({{"planner", "--planners"},
                  {"planners", "--planners"},
                  {"slots", "--slots"},
                  {"threads", "--threads"},
                  {"timeline_step", "--timeline-step"},
                  {"explain", "--explain"},
                  {"weight_overlap_fraction", "--weight-overlap"},
                  {"gradient_overlap_fraction", "--gradient-overlap"},
                  {"a2a_overlap_fraction", "--a2a-overlap"},
                  {"pipeline_stages", "--pipeline-stages"},
                  {"pipeline_layers", "--pipeline-layers"},
                  {"virtual_stages", "--virtual-stages"},
                  {"pipeline_schedule", "--pipeline-schedule"},
                  {"timeline", "--timeline"},
                  {"dense_grad_bytes", "--dense-grad-bytes"},
                  {"optimizer_state_bytes_per_param", "--optimizer-state-bytes"},
                  {"recompute_mla_up_proj", "--recompute-mla-up-proj"},
                  {"mtp_layers", "--mtp-layers"},
                  {"memory_bound_kernels", "--memory-bound-kernels"},
                  {"data_parallel", "--data-parallel"},
                  {"topoep_solve_us", "--topoep-solve-us"},
                  {"topoep_replica_uses", "--topoep-replica-uses"},
                  {"topoep_ib_load_slack", "--topoep-ib-slack"},
                  {"topoep_ib_opened_run", "--topoep-ib-opened-run"},
                  {"topoep_max_moves", "--topoep-max-moves"},
                  {"host_roundtrip_us", "--host-roundtrip-us"},
                  {"eplb_period_steps", "--eplb-period"},
                  {"eplb_window_steps", "--eplb-window"},
                  {"eplb_groups", "--eplb-groups"}},
                 [&] { run_simulate(*o); });
  });
}

}  // namespace topoep
