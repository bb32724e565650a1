#include "solver/topoep_solver.h"

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "solver/input_error.h"
#include "solver/static_plan.h"

namespace topoep {

TopoepParams topoep_params_for(const TopoepProblem& problem) {
  TopoepParams params;
  params.shape = TopoepShape{problem.topology.num_ranks(), problem.placement.num_experts(),
                             problem.placement.slots_per_rank, problem.topology.gpus_per_node};
  params.cost = problem.cost;
  params.max_moves = problem.max_moves > 0 ? problem.max_moves : default_max_moves(params.shape);
  params.ib_load_slack_permille = problem.ib_load_slack_permille;
  params.ib_opened_run = problem.ib_opened_run ? 1 : 0;
  return params;
}

namespace {

// The calling thread's workspace buffer, at least `words` long and 8-byte aligned. Left
// uninitialised: the solve writes every word it reads.
std::uint64_t* thread_workspace(std::size_t words) {
  thread_local std::unique_ptr<std::uint64_t[]> buffer;
  thread_local std::size_t capacity = 0;
  if (capacity < words) {
    buffer.reset(new std::uint64_t[words]);
    capacity = words;
  }
  return buffer.get();
}

}  // namespace

TopoepHostSolver::TopoepHostSolver(const TopoepProblem& problem, TopoepWorkspaceUse use)
    : params_(topoep_params_for(problem)),
      home_rank_(problem.placement.home_rank),
      workspace_words_((topoep_workspace_bytes(params_) + 7) / 8) {
  if (use == TopoepWorkspaceUse::kOwn) {
    buffer_.reset(new std::uint64_t[workspace_words_]);  // uninitialised, as thread_workspace's
    bind_topoep_workspace(params_, buffer_.get(), &workspace_);
    bound_to_ = buffer_.get();
  }
}

TopoepHostSolver::~TopoepHostSolver() = default;

int TopoepHostSolver::solve(const RoutingCounts& counts, const std::vector<ExpertId>& resident,
                            Plan* plan, const std::vector<std::uint8_t>& owed_holders,
                            int replica_uses, bool routes) {
  plan->num_ranks = params_.shape.num_ranks;
  plan->num_experts = params_.shape.num_experts;
  plan->slots_per_rank = params_.shape.slots_per_rank;
  plan->replica_expert.resize(static_cast<std::size_t>(params_.shape.num_slots()));
  const TopoepLayerInput input{counts.values().data(), home_rank_.data(),
                               resident.empty() ? nullptr : resident.data(),
                               owed_holders.empty() ? nullptr : owed_holders.data(), replica_uses};
  // Written in place: growing to the capacity writes nothing (RouteList leaves routes unset).
  plan->routes.resize(routes ? static_cast<std::size_t>(params_.shape.route_capacity()) : 0);
  std::int64_t num_routes = 0;
  std::int32_t num_moves = 0;
  TopoepLayerOutput output{plan->replica_expert.data(), routes ? plan->routes.data() : nullptr,
                           &num_routes, &num_moves};
  output.predicted = &last_predicted_;
  output.searched_moves = &last_searched_moves_;
  output.kept_log = &last_kept_log_;
  output.kept_run_kind = &last_kept_run_kind_;
  std::uint64_t* const buffer = buffer_ ? buffer_.get() : thread_workspace(workspace_words_);
  if (buffer != bound_to_) {
    bind_topoep_workspace(params_, buffer, &workspace_);
    bound_to_ = buffer;
  }
  topoep_solve_layer(params_, input, workspace_, output);
  plan->routes.resize(static_cast<std::size_t>(num_routes));
  last_kept_moves_ = num_moves;
  return num_moves;
}

KeptMoves TopoepHostSolver::last_kept_moves() const {
  using topoep_detail::kHomeSlot;
  using topoep_detail::kNewSlot;
  KeptMoves kept;
  kept.run = static_cast<KeptMoves::Run>(last_kept_run_kind_);
  const auto* log = static_cast<const topoep_detail::Move*>(workspace_.move_log) +
                    static_cast<std::int64_t>(last_kept_log_) * params_.max_moves;
  auto instance = [](std::int32_t slot) {
    return slot == kHomeSlot  ? KeptMove::Instance::kHome
           : slot == kNewSlot ? KeptMove::Instance::kNewReplica
                              : KeptMove::Instance::kReplica;
  };
  for (std::int32_t i = 0; i < last_kept_moves_; ++i) {
    const topoep_detail::Move& move = log[i];
    KeptMove out;
    out.expert = move.expert;
    out.tokens = move.tokens;
    out.from_rank = move.from_rank;
    out.from = instance(move.from_slot);
    out.to_rank = move.to_rank;
    out.to = instance(move.to_slot);
    out.gain = move.gain;
    out.ib_delta = move.ib_delta;
    // Only the greedy and the seeding weigh a gain, and they make a move only where it is
    // positive; the IB levelling phase records none.
    out.ib_levelling = move.gain <= 0;
    kept.moves.push_back(out);
  }
  return kept;
}

namespace {

// The link counters of a [5][R] block in RankCounters' order (load, NVLink out and in, IB out
// and in) into `tally`, its loads zeroed for the instances to fill.
void start_tally(const TokenCount* counters, int num_ranks, PlanTally* tally) {
  const std::size_t ranks = static_cast<std::size_t>(num_ranks);
  tally->nvlink_out.assign(counters + ranks, counters + 2 * ranks);
  tally->nvlink_in.assign(counters + 2 * ranks, counters + 3 * ranks);
  tally->ib_out.assign(counters + 3 * ranks, counters + 4 * ranks);
  tally->ib_in.assign(counters + 4 * ranks, counters + 5 * ranks);
  // The counters' load is the compute load (instance minimums included): the loads are summed
  // from the instances' own tokens instead.
  tally->loads.assign(ranks, 0);
  tally->instances.clear();
}

void add_instance(RankId rank, TokenCount tokens, PlanTally* tally) {
  if (tokens <= 0) return;
  tally->loads[static_cast<std::size_t>(rank)] += tokens;
  tally->instances.emplace_back(rank, tokens);
}

}  // namespace

void TopoepHostSolver::last_tally(PlanTally* tally) const {
  start_tally(workspace_.counter_tokens, params_.shape.num_ranks, tally);
  for (ExpertId e = 0; e < params_.shape.num_experts; ++e) {
    add_instance(home_rank_[static_cast<std::size_t>(e)], workspace_.home_tokens[e], tally);
  }
  for (std::int64_t j = 0; j < params_.shape.num_slots(); ++j) {
    add_instance(workspace_.slot_rank[j], workspace_.slot_tokens[j], tally);
  }
}

void TopoepHostSolver::last_static_tally(PlanTally* tally) const {
  start_tally(workspace_.static_tokens, params_.shape.num_ranks, tally);
  for (ExpertId e = 0; e < params_.shape.num_experts; ++e) {
    add_instance(home_rank_[static_cast<std::size_t>(e)], workspace_.expert_totals[e], tally);
  }
}

namespace {

void check_resident(const Placement& placement, const std::vector<ExpertId>& resident) {
  if (resident.empty()) return;
  const std::size_t expected =
      static_cast<std::size_t>(placement.num_ranks) * placement.slots_per_rank;
  if (resident.size() != expected) {
    throw InputError("resident",
                     "lists " + std::to_string(resident.size()) +
                         " slots, expected ranks x slots_per_rank = " + std::to_string(expected));
  }
  for (std::size_t j = 0; j < resident.size(); ++j) {
    const RankId rank = static_cast<RankId>(j / placement.slots_per_rank);
    const ExpertId expert = resident[j];
    if (expert == kNoExpert) continue;
    // Named only on failure: the planners check every record's replicas.
    auto fail = [&](const char* why) {
      throw InputError("resident[" + std::to_string(rank) + "][" +
                           std::to_string(j % placement.slots_per_rank) + "]",
                       "expert " + std::to_string(expert) + why);
    };
    if (expert < 0 || expert >= placement.num_experts()) fail(" is out of range");
    if (placement.home_rank[expert] == rank) fail(" lives on this rank");
    for (std::size_t k = rank * static_cast<std::size_t>(placement.slots_per_rank); k < j; ++k) {
      if (resident[k] == expert) fail(" is already resident here");
    }
  }
}

void check_owed_holders(const Placement& placement, const std::vector<std::uint8_t>& owed) {
  if (owed.empty()) return;
  const std::size_t ranks = static_cast<std::size_t>(placement.num_ranks);
  const std::size_t cells = static_cast<std::size_t>(placement.num_experts()) * ranks;
  if (owed.size() != cells) {
    throw InputError("owed_holders",
                     "lists " + std::to_string(owed.size()) +
                         " entries, expected experts x ranks = " + std::to_string(cells));
  }
  // One branch-free pass for the common case (every entry 0 or 1, no home marked); the entry
  // to name is searched for only when there is one: a planner checks this every record.
  std::uint8_t bits = 0;
  for (const std::uint8_t entry : owed) bits |= entry;
  bool bad = bits > 1;
  for (std::size_t e = 0; e < static_cast<std::size_t>(placement.num_experts()); ++e) {
    bad |= owed[e * ranks + static_cast<std::size_t>(placement.home_rank[e])] != 0;
  }
  for (std::size_t i = 0; bad && i < owed.size(); ++i) {
    if (owed[i] == 0) continue;
    const std::size_t expert = i / ranks, rank = i % ranks;
    auto fail = [&](const std::string& why) {
      throw InputError("owed_holders[" + std::to_string(expert) + "][" + std::to_string(rank) + "]",
                       why);
    };
    if (owed[i] != 1) fail(std::to_string(owed[i]) + " is neither 0 nor 1");
    if (placement.home_rank[expert] == static_cast<RankId>(rank)) {
      fail("rank " + std::to_string(rank) + " is expert " + std::to_string(expert) +
           "'s home, not a replica holder");
    }
  }
}

}  // namespace

void check_topoep_inputs(const TopoepProblem& problem, const RoutingCounts& counts,
                         const std::vector<ExpertId>& resident,
                         const std::vector<std::uint8_t>& owed_holders) {
  check_topoep_problem(problem);
  check_topoep_record(problem, counts, resident, owed_holders);
}

void check_topoep_problem(const TopoepProblem& problem) {
  check_topology_view(problem.topology);
  check_placement(problem.placement);
  check_cost_params(problem.cost);
  if (problem.ib_load_slack_permille < 0 || problem.ib_load_slack_permille > 1000) {
    throw InputError(
        "ib_load_slack_permille",
        "must be 0 to 1000 (got " + std::to_string(problem.ib_load_slack_permille) + ")");
  }
  if (problem.max_moves < 0 || problem.max_moves > kMaxMovesCap) {
    throw InputError("max_moves", "must be 0 (the default, 4 R (S + 1)) to " +
                                      std::to_string(kMaxMovesCap) + " (got " +
                                      std::to_string(problem.max_moves) + ")");
  }
  if (problem.placement.num_ranks != problem.topology.num_ranks()) {
    throw InputError("placement", "covers " + std::to_string(problem.placement.num_ranks) +
                                      " ranks, the topology has " +
                                      std::to_string(problem.topology.num_ranks()));
  }
}

void check_topoep_record(const TopoepProblem& problem, const RoutingCounts& counts,
                         const std::vector<ExpertId>& resident,
                         const std::vector<std::uint8_t>& owed_holders) {
  if (counts.num_ranks() != problem.topology.num_ranks()) {
    throw InputError("counts", "has " + std::to_string(counts.num_ranks()) +
                                   " source ranks (rows), the topology has " +
                                   std::to_string(problem.topology.num_ranks()) + " GPUs");
  }
  if (counts.num_experts() != problem.placement.num_experts()) {
    throw InputError("counts", "has " + std::to_string(counts.num_experts()) +
                                   " experts (columns), the placement " +
                                   std::to_string(problem.placement.num_experts()));
  }
  check_resident(problem.placement, resident);
  check_owed_holders(problem.placement, owed_holders);
  // A rank sends at most one gradient and receives at most one in each expert's chain.
  check_cost_range(
      problem.cost, counts,
      static_cast<std::int64_t>(problem.topology.num_ranks()) * problem.placement.slots_per_rank +
          (owed_holders.empty() ? 0 : problem.placement.num_experts()));
}

LayerPlan solve_topoep(const TopoepProblem& problem, const RoutingCounts& counts,
                       const std::vector<ExpertId>& resident) {
  check_topoep_inputs(problem, counts, resident);
  TopoepHostSolver solver(problem);
  LayerPlan result;
  result.moves = solver.solve(counts, resident, &result.plan);
  result.cost =
      predict_plan_cost(problem.topology, problem.placement, result.plan, resident, problem.cost);
  result.static_cost =
      predict_plan_cost(problem.topology, problem.placement, static_plan(counts, problem.placement),
                        resident, problem.cost);
  return result;
}

std::vector<Plan> solve_topoep_layers(const TopoepProblem& problem,
                                      const std::vector<RoutingCounts>& layers, int num_threads) {
  for (const RoutingCounts& counts : layers) check_topoep_inputs(problem, counts, {});
  std::vector<Plan> plans(layers.size());
  const std::size_t workers = std::max<std::size_t>(
      1, std::min<std::size_t>(num_threads < 1 ? 1 : num_threads, layers.size()));
  // Layer i goes to worker i % workers: fixed, so each plan is computed the same way whatever
  // the thread count (and every layer is independent anyway).
  auto work = [&](std::size_t worker) {
    TopoepHostSolver solver(problem);
    for (std::size_t i = worker; i < layers.size(); i += workers)
      solver.solve(layers[i], {}, &plans[i]);
  };
  std::vector<std::thread> threads;
  for (std::size_t worker = 1; worker < workers; ++worker) threads.emplace_back(work, worker);
  work(0);
  for (std::thread& thread : threads) thread.join();
  return plans;
}

}  // namespace topoep
