#include "tools/cli/simulation_table.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "common/text_list.h"
#include "sim/deepep_buffers.h"
#include "solver/planners/eplb_planner.h"
#include "tools/cli/table.h"

namespace topoep {

void print_simulation_table(const RunSummary& summary, std::ostream& out) {
  const auto& planners = summary.planners();
  const int static_index = summary.index_of("static");
  const bool has_ideal = summary.index_of("ideal") >= 0;
  TextTable table({"planner", "step ms", "tokens/s", "vs static", "% of ideal", "MoE ms/step",
                   "overhead ms/step", "max/mean (median)", "IB GB/step", "NVLink GB/step"});
  for (std::size_t p = 0; p < planners.size(); ++p) {
    const PlannerRunSummary& s = planners[p];
    const double steps = s.steps > 0 ? s.steps : 1;
    const int index = static_cast<int>(p);
    table.add_row(
        {s.planner, format_fixed(s.step_time_us() / 1e3, 2), format_fixed(s.tokens_per_s(), 0),
         static_index >= 0 ? format_fixed(summary.speedup(index, static_index), 3) + "x" : "-",
         has_ideal ? format_fixed(summary.percent_of_ideal(index), 1) : "-",
         format_fixed(static_cast<double>(s.moe) / 1e9 / steps, 2),
         format_fixed(static_cast<double>(s.overhead) / 1e9 / steps, 3),
         format_fixed(s.median_max_mean_load(), 3),
         format_fixed(
             static_cast<double>(s.ib_dispatch_bytes + s.ib_weight_bytes + s.grad_reduce_ib_bytes) /
                 1e9 / steps,
             2),
         format_fixed(static_cast<double>(s.nvlink_dispatch_bytes + s.nvlink_weight_bytes +
                                          s.grad_reduce_nvlink_bytes) /
                          1e9 / steps,
                      2)});
  }
  table.print(out);
  const int topoep = summary.index_of("topoep");
  if (topoep < 0) return;
  out << "\nTopoEP step-time speedup over:";
  const char* separator = " ";
  for (std::size_t p = 0; p < planners.size(); ++p) {
    if (static_cast<int>(p) == topoep || planners[p].planner == "ideal") continue;
    out << separator << planners[p].planner << " "
        << format_fixed(summary.speedup(topoep, static_cast<int>(p)), 3) << "x";
    separator = ", ";
  }
  out << "\n";
}

namespace {

std::string gigabytes(Bytes bytes) { return format_fixed(static_cast<double>(bytes) / 1e9, 2); }

// A part of the activations the backward can recompute instead of keep: how the memory
// table's header names it, how the note's levers do, its flag, whether this run recomputes it,
// and whether the model has it.
struct RecomputedPart {
  const char* name;
  const char* lever;
  const char* flag;
  bool recomputed;
  bool applies;
};

std::vector<RecomputedPart> recomputed_parts(const SimConfig& config) {
  const SimOptions& o = config.options;
  return {{"the experts' gated activation", "the expert activation", "--recompute-moe-act",
           o.recompute_moe_activation, true},
          {"the norms", "the norms", "--recompute-layernorm", o.recompute_layernorm, true},
          {"MLA's up-projections", "MLA's up-projections", "--recompute-mla-up-proj",
           o.recompute_mla_up_proj, config.model.multi_latent_attention()}};
}

// What the memory caption says of DeepEP's fixed buffers: counted, or why not.
std::string deepep_buffers_said(const SimConfig& config) {
  if (config.options.dispatcher != Dispatcher::kDeepEP) return "";
  const int gpus = config.topology.num_gpus();
  const std::optional<Bytes> bytes = deepep_buffer_bytes(gpus, config.model.hidden_size);
  if (!bytes) {
    return " (DeepEP recommends no config for " + std::to_string(gpus) +
           " GPUs: its fixed buffers are not counted)";
  }
  return ", and DeepEP's fixed NVLink and RDMA buffers, " + gigabytes(*bytes) + " GB";
}

}  // namespace

void print_gpu_memory(const RunSummary& summary, const SimConfig& config, std::ostream& out) {
  const SimOptions& options = config.options;
  const bool stages = options.pipeline_stages > 1;
  const std::vector<RecomputedPart> parts = recomputed_parts(config);
  std::vector<std::string> recomputed;
  for (const RecomputedPart& part : parts) {
    if (part.recomputed) recomputed.push_back(part.name);
  }
  out << "\nMemory the busiest GPU holds at its peak, in GB"
      << (stages ? ", and its pipeline stage" : "") << ":\n"
      << wrapped(
             "its model state (weights, gradients, optimizer state), the spare slots' "
             "replicas, and the activations held for the backward, the experts' and the "
             "attention's, the output head's and other dense parts' (" +
             (recomputed.empty() ? std::string("no recomputation")
                                 : "recomputed: " + spoken_list(recomputed)) +
             "), the loss's transient logits among the dense ones, and buffers: what the "
             "experts' token buffers add as a layer's forward or backward runs" +
             deepep_buffers_said(config) +
             "; the all-to-alls' dispatch-side buffers are not counted (sim/README.md, "
             "\"Memory a GPU holds\"):");
  std::vector<std::string> header = {"planner", "model state",       "spare slots", "expert act.",
                                     "buffers", "dense activations", "total"};
  if (stages) header.push_back("stage");
  TextTable table(header);
  for (const PlannerRunSummary& s : summary.planners()) {
    const StageMemory memory = s.busiest_memory();
    std::vector<std::string> row = {s.planner,
                                    gigabytes(memory.model_state),
                                    gigabytes(memory.spare_slots),
                                    gigabytes(memory.expert_activations),
                                    gigabytes(memory.token_buffers + memory.deepep_buffers),
                                    gigabytes(memory.dense_activations),
                                    gigabytes(memory.total())};
    if (stages) row.push_back(std::to_string(s.busiest_memory_stage()));
    table.add_row(row);
  }
  table.print(out);
  // Beyond the GPU's memory before what is not counted: the run cannot fit as laid out.
  const GpuSpec& gpu = config.topology.gpu;
  if (gpu.hbm_capacity_gb <= 0) return;
  std::vector<std::string> over;
  for (const PlannerRunSummary& s : summary.planners()) {
    if (s.planner != "ideal" &&
        static_cast<double>(s.busiest_memory().total()) / 1e9 > gpu.hbm_capacity_gb) {
      over.push_back(s.planner);
    }
  }
  if (over.empty()) return;
  const int planned =
      static_cast<int>(summary.planners().size()) - (summary.index_of("ideal") >= 0 ? 1 : 0);
  // What would hold less, of what this run did not already do.
  std::vector<std::string> levers = {"more pipeline stages (--pipeline-stages)"};
  if (options.dense_sync != DenseSync::kDistributedOptimizer) {
    levers.push_back(
        "the distributed optimizer (--dense-sync distributed, over --data-parallel "
        "copies)");
  }
  if (config.slots_per_rank > 0) levers.push_back("fewer spare slots (--slots)");
  std::vector<std::string> recomputable, flags;
  for (const RecomputedPart& part : parts) {
    if (part.recomputed || !part.applies) continue;
    recomputable.push_back(part.lever);
    flags.push_back(part.flag);
  }
  if (!recomputable.empty()) {
    levers.push_back("recomputing " + spoken_list(recomputable) + " (" + join_names(flags) + ")");
  }
  levers.push_back("fewer tokens a microbatch");
  out << wrapped("Note: the busiest GPU holds more than its " +
                 format_fixed(gpu.hbm_capacity_gb, gpu.hbm_capacity_gb >= 1 ? 0 : 3) +
                 " GB of memory (" + gpu.name + ") under " +
                 (static_cast<int>(over.size()) == planned && planned > 1 ? "every planner"
                                                                          : spoken_list(over)) +
                 ", before what is not counted: this layout does not fit as run. Less is held "
                 "with " +
                 spoken_list(levers, "or") + ".");
}

// Where TopoEP's step is longer than static's, what its replicas saved against what they and
// its solves cost, per step, in ms: the table shows the MoE time and the overhead, not the
// step-end syncs the replicas add or leave less idle time for.
// With pipeline stages the parts sum over the stages, as the table's do, and the step is the
// schedule's span: no remainder is given.
void print_topoep_behind_static(const RunSummary& summary, bool stages, std::ostream& out) {
  const int topoep = summary.index_of("topoep"), stat = summary.index_of("static");
  if (topoep < 0 || stat < 0) return;
  const PlannerRunSummary& t = summary.planners()[static_cast<std::size_t>(topoep)];
  const PlannerRunSummary& s = summary.planners()[static_cast<std::size_t>(stat)];
  if (t.steps <= 0 || s.steps <= 0 || t.step_time_us() <= s.step_time_us()) return;
  const auto ms = [](Picoseconds sum, int steps) { return static_cast<double>(sum) / 1e9 / steps; };
  const double saved = ms(s.moe, s.steps) - ms(t.moe, t.steps);
  const double weights = ms(t.weight_exposed, t.steps) - ms(s.weight_exposed, s.steps);
  const double solves = ms(t.overhead, t.steps) - ms(s.overhead, s.steps);
  const double gradients = ms(t.grad_reduce, t.steps) - ms(s.grad_reduce, s.steps);
  const double syncs = ms(t.dense_grad_reduce + t.expert_grad_sync, t.steps) -
                       ms(s.dense_grad_reduce + s.expert_grad_sync, s.steps);
  const double longer = (t.step_time_us() - s.step_time_us()) / 1e3;
  const double rest = longer + saved - solves - gradients - syncs;
  const auto text = [](double value) { return format_fixed(value, 2) + " ms"; };
  // Parts below a hundredth of a millisecond are left out: they round to nothing.
  const auto shows = [](double value) { return std::abs(value) >= 0.005; };
  std::vector<std::string> costs;
  if (shows(solves)) costs.push_back("its GPU solves take " + text(solves));
  if (shows(gradients)) {
    costs.push_back("its new replicas' gradients " + text(gradients) + " at the step's end");
  }
  if (shows(syncs)) {
    costs.push_back("the data-parallel syncs " +
                    (syncs > 0 ? text(syncs) + " more (the replicas' gradients take their idle "
                                               "time)"
                               : text(-syncs) + " less"));
  }
  if (!stages && shows(rest)) {
    costs.push_back("the rest of the step " +
                    (rest > 0 ? text(rest) + " more" : text(-rest) + " less"));
  }
  std::string gain = shows(saved) ? "its plans save " + text(saved) + " of MoE time"
                                  : "its plans save no MoE time";
  if (shows(weights))
    gain += " (net of the " + text(weights) + " their replicas' weights leave exposed)";
  out << "\n"
      << wrapped("Note: topoep's step is " + format_fixed(summary.speedup(topoep, stat), 3) +
                 "x static's here. Per step" + (stages ? " (summed over the stages)" : "") + " " +
                 gain + (costs.empty() ? std::string() : ", while " + spoken_list(costs)) +
                 ". Replicas pay only where they save more than they cost: with few tokens a "
                 "microbatch, and under DeepEP's sends, which save less than the solver "
                 "expects, they may not (solver/DECISIONS.md, \"Smaller microbatches under "
                 "DeepEP\").");
}

void print_planner_notes(const RunSummary& summary, int steps, const SimConfig& config,
                         std::ostream& out) {
  const PlannerOptions& options = config.planner_options;
  const int slots = config.slots_per_rank;
  const bool topoep_runs = summary.index_of("topoep") >= 0;
  print_topoep_behind_static(summary, config.options.pipeline_stages > 1, out);
  if (topoep_runs && slots > 0) {
    out << "\nNote: topoep's GPU solve is charged " << options.topoep_solve_us
        << " us per layer and microbatch (--topoep-solve-us),\n"
           "the design target; the CUDA solver has not been timed on a GPU yet (sim/README.md\n"
           "shows how the gain moves with it).\n";
    // Its max/mean column reads as a worse balance without this: the relaxed IB pass trades
    // compute balance for IB time, which only exists across nodes.
    if (config.topology.nodes > 1) {
      const bool deepep = config.options.dispatcher == Dispatcher::kDeepEP;
      const auto percent = [](double slack) {
        const double value = 100 * slack;
        return format_fixed(value, value == std::floor(value) ? 0 : 1) + "%";
      };
      out << "\nNote: topoep may raise a GPU's compute up to "
          << percent(topoep_ib_load_slack(options, deepep))
          << " above the mean where that\nsaves more IB time (--topoep-ib-slack";
      if (options.topoep_ib_load_slack >= 0) {
        out << ")";
      } else if (deepep) {
        out << "; its solver overprices DeepEP's sends, so\n"
            << percent(kTopoepIbSlackPerAssignment) << " only for per-assignment all-to-alls)";
      } else {
        out << "; " << percent(kTopoepIbSlackNodeDeduplicated)
            << " with --dispatcher deepep, whose sends\nits solver overprices)";
      }
      out << ":\nits max/mean trades balance for a shorter step.\n";
    }
  }
  if (summary.index_of("topoep-flat") >= 0) {
    out << "\nNote: topoep-flat is TopoEP's solver blind to the link hierarchy: it plans as if\n"
           "all GPUs shared one NVLink domain, and runs on the real cluster. TopoEP over it is\n"
           "what weighing NVLink against IB buys.\n";
  }
  if (summary.index_of("topoep-balance") >= 0) {
    out << "\nNote: topoep-balance is TopoEP's solver weighing compute alone: every token,\n"
           "weight and gradient it moves is free to it, so it levels the load wherever it can,\n"
           "and runs at their real cost. TopoEP over it is what its cost model buys.\n";
  }
  // Its first replan is at step K (eplb_planner.cc: the steps before it are its history).
  const bool eplb_never_replanned =
      summary.index_of("eplb") >= 0 && steps <= options.eplb_period_steps;
  if (eplb_never_replanned) {
    out << "\nNote: eplb replans every " << options.eplb_period_steps
        << " steps, the first at step " << options.eplb_period_steps << "; this trace's " << steps
        << (steps == 1 ? " step ends" : " steps end")
        << " before it, so eplb ran the home layout throughout (as static does).\n"
        << "A shorter period (simulate --eplb-period K) lets it replan within the trace.\n";
  }
  if (slots == 0) return;  // no planner can make a replica: every row is static's
  // New replicas and migrations are the only weight traffic, so a planner that moved none
  // made no replica on any record.
  const Topology& topology = config.topology;
  const bool eplb_keeps_copies_home =
      topology.gpus_per_node == 1 && topology.nodes > 1 &&
      eplb_policy(options.eplb_groups, topology.nodes, config.model.expert_groups,
                  config.model.num_experts)
          .hierarchical;
  for (const PlannerRunSummary& s : summary.planners()) {
    if (s.planner == "static" || s.planner == "ideal") continue;
    if (s.planner == "eplb" && eplb_never_replanned) continue;
    if (s.nvlink_weight_bytes + s.ib_weight_bytes > 0) continue;
    const bool eplb = s.planner == "eplb" || s.planner == "eplb-microbatch";
    const bool home_copies = eplb && eplb_keeps_copies_home;
    out << "\nNote: " << s.planner << " made no replica on any record: "
        << (home_copies
                // Its layout fills every slot, but each copy lands on the expert's home GPU.
                ? "with one GPU a node, EPLB's hierarchical\n"
                  "policy (expert groups packed onto nodes) keeps every copy of an expert on its\n"
                  "home GPU, so it ran the static plan throughout"
                : eplb ? "its layouts put no copy of an expert on a GPU\n"
                         "that did not hold it, so it ran the static plan throughout"
                       : "at these costs no replica paid for moving\n"
                         "its weights, so it ran the static plan throughout")
        << (s.overhead > 0 ? " (its row adds its planning overhead).\n" : ".\n");
    if (home_copies) out << "--eplb-groups 1 runs its global policy.\n";
  }
}

}  // namespace topoep
