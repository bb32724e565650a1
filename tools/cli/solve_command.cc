#include "tools/cli/solve_command.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "common/flag_errors.h"
#include "common/text_list.h"
#include "models/model_json.h"
#include "sim/home_layout_check.h"
#include "sim/own_routing.h"
#include "sim/plan_check.h"
#include "solver/input_error.h"
#include "solver/plan_encoding.h"
#include "solver/planners/basic_planners.h"
#include "solver/planners/ideal.h"
#include "solver/planners/planner.h"
#include "solver/static_plan.h"
#include "solver/topoep_solver.h"
#include "tools/cli/gemm_flags.h"
#include "tools/cli/kept_moves_output.h"
#include "tools/cli/table.h"
#include "tools/cli/topology_flags.h"
#include "topologies/topology_presets.h"

#if defined(TOPOEP_WITH_CUDA)
#include "solver/cuda/topoep_cuda.h"
#endif

namespace topoep {
namespace {

struct SolveOptions {
  std::string counts_path;
  TopologyFlags cluster;  // no --topology: the preset with the counts' source ranks as GPUs
  std::string model;      // empty: the preset the counts' experts imply
  int slots = 1;
  bool uneven_homes = false;
  bool fp8_gemms = false;
  bool no_weight_cost = false;
  bool linear_compute = false;
  // The solver's own default, which keeps issue 3's balance (`simulate`'s TopoEP trades more
  // compute for IB by default: PlannerOptions::topoep_ib_load_slack)
  double ib_slack = kDefaultIbLoadSlackPermille / 1000.0;
  int max_moves = 0;      // the solver's default
  int ib_opened_run = 1;  // the solver's default, as `simulate` under per-assignment dispatch
  std::string planner = "topoep";
  int threads = 1;
  std::string backend = "host";
  bool json = false;
  bool check = false;
  bool explain = false;
};

// One decision per layer (each layer is its own planner: planners keep per-layer state), all
// as record (step 0, microbatch 0). TopoEP goes through the batched solver so that --threads
// and --backend apply; its plans are the same as its planner's on a first record. With
// --explain, one host solver solves the layers in turn and `explained` gets each plan's moves.
std::vector<PlannerDecision> plan_all(const SolveOptions& options, const PlannerContext& context,
                                      const TopoepProblem& problem,
                                      const std::vector<RoutingCounts>& layers,
                                      std::vector<KeptMoves>* explained) {
  std::vector<PlannerDecision> decisions;
  PlannerOptions planner_options;  // what the flags set; each planner reads its own
  planner_options.topoep_ib_load_slack = options.ib_slack;
  planner_options.topoep_max_moves = options.max_moves;
  planner_options.topoep_ib_opened_run = options.ib_opened_run;
  if (options.planner == "topoep") {
    std::vector<Plan> plans;
    if (options.explain) {
      TopoepHostSolver solver(problem);
      for (const RoutingCounts& counts : layers) {
        plans.emplace_back();
        solver.solve(counts, {}, &plans.back());
        explained->push_back(solver.last_kept_moves());
      }
    } else if (options.backend == "cuda") {
#if defined(TOPOEP_WITH_CUDA)
      plans = solve_topoep_layers_cuda(problem, layers);
#else
      throw InputError("--backend", "this build has no CUDA backend (build with --config=cuda)");
#endif
    } else {
      plans = solve_topoep_layers(problem, layers, options.threads);
    }
    for (Plan& plan : plans) {
      decisions.push_back(PlannerDecision{problem.placement, std::move(plan), {}, {}, {}});
      // The GPU solve the topoep planner charges (topoep-flat's too).
      decisions.back().overhead.host_ps = topoep_solve_ps(problem.placement, planner_options);
      // As make_planner()'s planners are charged (the batched solve bypasses them).
      charge_gradient_reduction(decisions.back(), context);
    }
    return decisions;
  }
  if (options.backend == "cuda")
    throw InputError("--backend", "only the topoep planner runs on CUDA");
  for (const RoutingCounts& counts : layers) {
    decisions.push_back(
        make_planner(options.planner, context, planner_options)->plan(RecordId{}, counts));
  }
  return decisions;
}

nlohmann::json layer_json(const Plan& plan, const PlanCost& before, const PlanCost& after,
                          Picoseconds overhead_ps, Picoseconds gradient_ps) {
  nlohmann::json replicas = nlohmann::json::array();
  for (RankId rank = 0; rank < plan.num_ranks; ++rank) {
    nlohmann::json row = nlohmann::json::array();
    for (int slot = 0; slot < plan.slots_per_rank; ++slot)
      row.push_back(plan.replica_at(rank, slot));
    replicas.push_back(row);
  }
  nlohmann::json routes = nlohmann::json::array();
  for (const Route& route : plan.routes)
    routes.push_back({route.src, route.expert, route.dst, route.tokens});
  return {{"plan_hash", format_plan_hash(plan_hash(plan))},
          {"replicas", replicas},
          {"routes", routes},
          {"loads", after.loads},
          {"max_mean_before", before.max_mean_load()},
          {"max_mean_after", after.max_mean_load()},
          {"ib_bytes_before", before.ib_dispatch_bytes},
          {"ib_bytes_after", after.ib_dispatch_bytes},
          {"predicted_us_before", before.times.total / 1e6},
          {"predicted_us_after", after.times.total / 1e6},
          {"overhead_us", overhead_ps / 1e6},
          {"gradient_us", gradient_ps / 1e6}};
}

// The model named, else the one preset with the counts' experts, else the documented default
// (issue 3: `solve` has one), said on stderr so that --json's output stays a plan.
ModelSpec solve_model(const std::string& named, int num_experts) {
  if (!named.empty()) return load_model(named);
  if (!model_presets_fitting(num_experts, 0).empty()) {
    return load_model(implied_model_preset(num_experts, 0, "--model"));
  }
  ModelSpec model = default_model_with_experts(num_experts);
  std::cerr << "topoep: --model not given and no preset has " << num_experts
            << " experts: weighing the plans with " << model.name << " (top-" << model.top_k
            << "); pass --model to choose\n";
  return model;
}

void run_solve(const SolveOptions& options) {
  const std::vector<std::string> names = planner_names();
  if (options.planner != "ideal" &&
      std::find(names.begin(), names.end(), options.planner) == names.end()) {
    make_planner(options.planner, PlannerContext{}, PlannerOptions{});  // throws, listing names
  }
  if (options.explain && (options.planner != "topoep" || options.backend != "host")) {
    throw InputError("--explain",
                     "reads the TopoEP host solver's moves: use --planner topoep --backend host");
  }
  std::int64_t trace_records = 0;  // 0: a counts file
  const std::vector<RoutingCounts> layers =
      read_routing_layers(options.counts_path, kRoutingRecordsRead, &trace_records);
  const Topology topology = load_topology_flags(options.cluster, layers.front().num_ranks());
  ModelSpec model = solve_model(options.model, layers.front().num_experts());
  if (options.fp8_gemms) {
    model.fp8_gemms = true;
    check_fp8_gemms(topology);
  }
  TopoepProblem problem = problem_for_routing(
      layers, topology, model, options.slots,
      {options.counts_path, "--topology", "--model", "--slots"}, !options.no_weight_cost,
      options.uneven_homes ? HomeLayout::kUneven : HomeLayout::kEven);
  if (options.linear_compute) problem.cost.instance_min_tokens = 0;
  problem.ib_load_slack_permille = static_cast<int>(std::lround(options.ib_slack * 1000));
  problem.max_moves = options.max_moves;
  problem.ib_opened_run = options.ib_opened_run == 1;
  // The options above change what the solver weighs, and so what may overflow.
  for (const RoutingCounts& counts : layers) check_topoep_inputs(problem, counts, {});
  PlannerContext context{problem.topology, problem.placement, problem.cost};
  context.expert_groups = model.expert_groups;

  nlohmann::json output = {{"layers", nlohmann::json::array()}};
  TextTable table(
      {"layer", "plan hash", "max/mean", "IB MB", "predicted us", "overhead us", "new replicas"});
  const bool ideal = options.planner == "ideal";
  // The ideal bound is measured against TopoEP's plans (and the static ones).
  SolveOptions planned = options;
  if (ideal) planned.planner = "topoep";
  std::vector<KeptMoves> explained;
  const std::vector<PlannerDecision> decisions =
      plan_all(planned, context, problem, layers, &explained);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const PlannerDecision& d = decisions[l];
    const PlanCost before =
        predict_plan_cost(problem.topology, problem.placement,
                          static_plan(layers[l], problem.placement), {}, problem.cost);
    const PlanCost after = predict_plan_cost(problem.topology, d.placement, d.plan, d.resident,
                                             problem.cost, d.weight_delivery);
    if (options.check) {
      check_priced_plan("layer " + std::to_string(l),
                        PricedPlan{layers[l], d, after.loads, after.nvlink_dispatch_bytes,
                                   after.ib_dispatch_bytes},
                        problem.topology, problem.cost.dispatch_bytes_per_token);
    }
    const Picoseconds overhead = overhead_time_ps(d.overhead, after, problem.cost);
    if (ideal) {
      // The bound against the plans compared here (static and TopoEP): see planners/ideal.h.
      const PhaseTimes bound =
          ideal_phase_times(layers[l], problem.cost, {before.times, after.times});
      if (options.json) {
        output["layers"].push_back({{"predicted_us_before", before.times.total / 1e6},
                                    {"predicted_us_after", bound.total / 1e6},
                                    {"overhead_us", 0.0}});
      } else {
        table.add_row({std::to_string(l), "-", "1.000", "-",
                       format_fixed(before.times.total / 1e6, 1) + " -> " +
                           format_fixed(bound.total / 1e6, 1),
                       "0.0", "-"});
      }
      continue;
    }
    if (options.json) {
      output["layers"].push_back(
          layer_json(d.plan, before, after, overhead, d.overhead.gradient_ps));
      if (options.explain) output["layers"].back().update(kept_moves_json(explained[l]));
      continue;
    }
    table.add_row(
        {std::to_string(l), format_plan_hash(plan_hash(d.plan)),
         format_fixed(before.max_mean_load(), 3) + " -> " + format_fixed(after.max_mean_load(), 3),
         format_fixed(before.ib_dispatch_bytes / 1e6, 1) + " -> " +
             format_fixed(after.ib_dispatch_bytes / 1e6, 1),
         format_fixed(before.times.total / 1e6, 1) + " -> " +
             format_fixed(after.times.total / 1e6, 1),
         format_fixed(overhead / 1e6, 1), std::to_string(after.new_replicas)});
  }
  if (options.json) {
    std::cout << output.dump() << "\n";
    return;
  }
  std::cout << options.planner << " on " << topology.name << " (" << topology.nodes << " x "
            << topology.gpus_per_node << "), " << model.name << ", S = " << options.slots
            << (options.no_weight_cost ? ", replica weights free" : "")
            << (problem.cost.instance_min_tokens > 0
                    ? ", an expert instance computes at least " +
                          std::to_string(problem.cost.instance_min_tokens) + " tokens' worth"
                    : ", linear compute")
            // `simulate` gives TopoEP another slack by default: say which this is.
            << (options.planner == "topoep" && topology.nodes > 1
                    ? ", IB slack " + format_fixed(100 * options.ib_slack, 1) + "% (--ib-slack)"
                    : "")
            << "\n\n";
  table.print(std::cout);
  for (std::size_t l = 0; l < explained.size(); ++l) {
    print_kept_moves(explained[l], "layer " + std::to_string(l), topology.gpus_per_node, std::cout);
  }
  if (options.planner == "eplb") {
    // Its replans read the expert loads of earlier steps (planners/eplb_planner.cc); the layers
    // solved here are one microbatch of one step.
    std::cout << "\nNote: eplb as deployed replans from the expert loads of earlier steps, and "
                 "these counts are its first, so it kept the home layout. eplb-microbatch "
                 "plans from the counts themselves.\n";
  }
  if (trace_records > 0) {
    const std::string which =
        static_cast<std::int64_t>(layers.size()) == trace_records
            ? "all " + std::to_string(trace_records)
            : "the first " + std::to_string(layers.size()) + " of " + std::to_string(trace_records);
    std::cout << "\nSolved " << which << " records of " << options.counts_path
              << ", each as its own layer with no replica resident (topoep trace slice selects "
                 "others; topoep simulate replays a step's microbatches in order).\n";
  }
  if (options.check) {
    std::cout
        << "\n--check: all " << layers.size()
        << " plans valid, and reported with the loads and dispatch bytes their routes imply\n";
  }
}

}  // namespace

void add_solve_command(CLI::App& app) {
  CLI::App* solve = app.add_subcommand("solve", "Plan routing counts with a planner");
  auto options = std::make_shared<SolveOptions>();
  solve
      ->add_option("--counts", options->counts_path,
                   "JSON: {\"counts\": [[...E...], ...R rows]} or {\"layers\": [...]}, or a "
                   "trace directory (its first 64 records, each solved as its own layer)")
      ->required();
  CLI::Option* topology = solve->add_option(
      "--topology", options->cluster.topology,
      "Preset or JSON file (default: the preset with the counts' source ranks as GPUs)");
  add_reshape_flags(solve, options->cluster, topology);
  solve->add_option("--model", options->model,
                    "Model preset or JSON file (default: the preset with the counts' experts, else "
                    "deepseek-v3's experts, as many as the counts have)");
  solve->add_option("--slots", options->slots, "Spare expert slots per GPU (S)")
      ->capture_default_str();
  solve->add_flag("--uneven-homes", options->uneven_homes, kUnevenHomesHelp);
  solve->add_flag("--fp8-gemms", options->fp8_gemms, kFp8GemmsHelp);
  solve->add_flag("--no-weight-cost", options->no_weight_cost,
                  "Replica weight transfer is free (pure balancing)");
  solve->add_flag("--linear-compute", options->linear_compute,
                  "Every token costs the same compute, however few its expert instance has "
                  "(no minimum from the GEMM curve's memory-bound part: token balancing)");
  CLI::Option* ib_slack =
      solve
          ->add_option("--ib-slack", options->ib_slack,
                       "TopoEP: how far above the mean load (a fraction of it) a GPU's compute "
                       "may rise to save IB time (the solver's default; `simulate` gives TopoEP " +
                           format_fixed(kTopoepIbSlackPerAssignment, 2) + ", " +
                           format_fixed(kTopoepIbSlackNodeDeduplicated, 2) +
                           " with --dispatcher deepep)")
          ->check(CLI::Range(0.0, 1.0))
          ->capture_default_str();
  CLI::Option* max_moves =
      solve
          ->add_option("--max-moves", options->max_moves,
                       "TopoEP: cap on the moves of each search (0: 4 R (S + 1))")
          ->check(CLI::Range(0, static_cast<int>(kMaxMovesCap)))
          ->capture_default_str();
  CLI::Option* ib_opened_run =
      solve
          ->add_option("--ib-opened-run", options->ib_opened_run,
                       "TopoEP: 1 to let the search try a second run with each GPU's first "
                       "replica over IB prepaid, 0 not (`simulate` gives 0 with --dispatcher "
                       "deepep)")
          ->check(CLI::Range(0, 1))
          ->capture_default_str();
  solve
      ->add_option("--planner", options->planner,
                   "topoep, topoep-flat (blind to the NVLink/IB hierarchy), topoep-balance "
                   "(weighing compute alone), static, eplb, eplb-microbatch, shadowing or ideal")
      ->capture_default_str();
  solve->add_option("--threads", options->threads, "Host threads over layers")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  solve->add_option("--backend", options->backend, "host or cuda")
      ->capture_default_str()
      ->check(CLI::IsMember({"host", "cuda"}));
  solve->add_flag("--json", options->json, "Print the plans as JSON");
  solve->add_flag("--explain", options->explain,
                  "TopoEP: list the moves each plan keeps, in the order the search made them "
                  "(with --json: each layer's \"run\" and \"moves\")");
  solve->add_flag(
      "--check", options->check,
      "Validate every plan (and the loads and bytes it is reported with); stop at the first "
      "invalid one");
  solve->callback([options, ib_slack, max_moves, ib_opened_run] {
    // Another planner would ignore them: the plans would not be what was asked for.
    for (const auto& [option, field] :
         {std::pair{ib_slack, "topoep_ib_load_slack"}, std::pair{max_moves, "topoep_max_moves"},
          std::pair{ib_opened_run, "topoep_ib_opened_run"}}) {
      const std::vector<std::string> readers = planners_reading_option(field);
      if (option->count() > 0 &&
          std::find(readers.begin(), readers.end(), options->planner) == readers.end()) {
        throw InputError(option->get_name(), "applies to the " + spoken_list(readers) +
                                                 (readers.size() > 1 ? " planners" : " planner") +
                                                 " only, not '" + options->planner + "'");
      }
    }
    naming_flags({{"planner", "--planner"}, {"slots_per_rank", "--slots"}},
                 [&] { run_solve(*options); });
  });
}

}  // namespace topoep
