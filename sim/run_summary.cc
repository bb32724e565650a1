#include "sim/run_summary.h"

#include <algorithm>
#include <cstdio>

#include "common/median.h"

namespace topoep {

double PlannerRunSummary::step_time_us() const {
  return steps == 0 ? 0.0 : static_cast<double>(step_time) / 1e6 / steps;
}

double PlannerRunSummary::tokens_per_s() const {
  return step_time == 0 ? 0.0 : static_cast<double>(tokens) * 1e12 / static_cast<double>(step_time);
}

double PlannerRunSummary::median_max_mean_load() const {
  return max_mean_loads.empty() ? 1.0 : median(max_mean_loads);
}

Bytes PlannerRunSummary::peak_expert_activation_bytes() const {
  return most_expert_activations(stage_memory);
}

int PlannerRunSummary::busiest_memory_stage() const {
  int busiest = 0;
  for (std::size_t s = 1; s < stage_memory.size(); ++s) {
    if (stage_memory[s].total() > stage_memory[busiest].total()) busiest = static_cast<int>(s);
  }
  return busiest;
}

StageMemory PlannerRunSummary::busiest_memory() const {
  return stage_memory.empty() ? StageMemory{} : stage_memory[busiest_memory_stage()];
}

RunSummary::RunSummary(std::vector<std::string> planners) {
  for (std::string& name : planners) {
    planners_.emplace_back();
    planners_.back().planner = std::move(name);
  }
}

void RunSummary::add(const StepResult& step) {
  for (std::size_t p = 0; p < planners_.size(); ++p) {
    PlannerRunSummary& s = planners_[p];
    const StepTotals& totals = step.planners[p];
    ++s.steps;
    s.tokens += step.tokens;
    s.step_time += totals.step_time;
    s.moe += totals.moe;
    s.moe_forward += totals.moe_forward;
    s.overhead += totals.overhead;
    s.dense += totals.dense;
    s.outside += totals.outside;
    s.grad_reduce += totals.grad_reduce;
    s.dense_grad_reduce += totals.dense_grad_reduce;
    s.dense_param_gather += totals.dense_param_gather;
    s.expert_grad_sync += totals.expert_grad_sync;
    s.expert_param_gather += totals.expert_param_gather;
    s.optimizer += totals.optimizer;
    s.pipeline_idle += totals.pipeline_idle;
    s.a2a_hidden -= totals.a2a_unhidden;  // the records' sum below counts it
    s.peak_expert_tokens = std::max(s.peak_expert_tokens, totals.peak_expert_tokens);
    std::vector<StageMemory>& stages = s.stage_memory;
    if (stages.empty()) stages = totals.stage_memory;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      // The most of each over the steps: the buffers as what they add to the expert
      // activations' most, so that the stage's total is the most it held with them.
      const StageMemory& step_stage = totals.stage_memory[i];
      const Bytes with_buffers = std::max(stages[i].expert_activations + stages[i].token_buffers,
                                          step_stage.expert_activations + step_stage.token_buffers);
      stages[i].expert_activations =
          std::max(stages[i].expert_activations, step_stage.expert_activations);
      stages[i].token_buffers = with_buffers - stages[i].expert_activations;
    }
    for (const RecordResult& record : step.records) {
      const LayerCost& c = record.planners[p];
      ++s.records;
      s.dispatch += c.dispatch;
      s.compute += c.compute;
      s.combine += c.combine;
      s.weight_exposed += c.weight_exposed;
      s.combine_grad += c.combine_grad;
      s.compute_grad += c.compute_grad;
      s.dispatch_grad += c.dispatch_grad;
      s.a2a_hidden += c.a2a_hidden_forward + c.a2a_hidden_backward;
      s.nvlink_dispatch_bytes += c.nvlink_dispatch_bytes;
      s.ib_dispatch_bytes += c.ib_dispatch_bytes;
      s.nvlink_weight_bytes += c.nvlink_weight_bytes;
      s.ib_weight_bytes += c.ib_weight_bytes;
      s.grad_reduce_nvlink_bytes += c.grad_reduce_nvlink_bytes;
      s.grad_reduce_ib_bytes += c.grad_reduce_ib_bytes;
      s.dense_sync_nvlink_bytes += c.dense_sync_nvlink_bytes;
      s.dense_sync_ib_bytes += c.dense_sync_ib_bytes;
      s.expert_sync_ib_bytes += c.expert_sync_ib_bytes;
      s.max_mean_loads.push_back(c.max_mean_load);
    }
  }
}

int RunSummary::index_of(const std::string& name) const {
  for (std::size_t p = 0; p < planners_.size(); ++p) {
    if (planners_[p].planner == name) return static_cast<int>(p);
  }
  return -1;
}

double RunSummary::speedup(int planner, int other) const {
  const Picoseconds mine = planners_[planner].step_time;
  return mine == 0 ? 1.0
                   : static_cast<double>(planners_[other].step_time) / static_cast<double>(mine);
}

double RunSummary::percent_of_ideal(int planner) const {
  const int ideal = index_of("ideal");
  if (ideal < 0 || planners_[planner].step_time == 0) return 0.0;
  return 100.0 * static_cast<double>(planners_[ideal].step_time) /
         static_cast<double>(planners_[planner].step_time);
}

std::string format_us(Picoseconds ps) {
  char text[48];
  const char* sign = ps < 0 ? "-" : "";
  const long long magnitude = ps < 0 ? -static_cast<long long>(ps) : static_cast<long long>(ps);
  std::snprintf(text, sizeof text, "%s%lld.%06lld", sign, magnitude / 1000000, magnitude % 1000000);
  return text;
}

nlohmann::json RunSummary::to_json(const nlohmann::json& run) const {
  nlohmann::json planners = nlohmann::json::array();
  for (std::size_t p = 0; p < planners_.size(); ++p) {
    const PlannerRunSummary& s = planners_[p];
    const double steps = std::max(1, s.steps);
    auto per_step_us = [&](Picoseconds total) { return static_cast<double>(total) / 1e6 / steps; };
    auto per_step_bytes = [&](Bytes total) { return static_cast<double>(total) / steps; };
    nlohmann::json speedups = nlohmann::json::object();
    for (std::size_t q = 0; q < planners_.size(); ++q) {
      if (q != p)
        speedups[planners_[q].planner] = speedup(static_cast<int>(p), static_cast<int>(q));
    }
    std::vector<Bytes> stage_activation_bytes;
    nlohmann::json stages = nlohmann::json::array();
    for (const StageMemory& stage : s.stage_memory) {
      stage_activation_bytes.push_back(stage.expert_activations);
      stages.push_back({{"model_state", stage.model_state},
                        {"spare_slots", stage.spare_slots},
                        {"expert_activations", stage.expert_activations},
                        {"token_buffers", stage.token_buffers},
                        {"dense_activations", stage.dense_activations},
                        {"deepep_buffers", stage.deepep_buffers},
                        {"total", stage.total()}});
    }
    nlohmann::json entry = {
        {"planner", s.planner},
        {"steps", s.steps},
        {"records", s.records},
        {"step_time_us", s.step_time_us()},
        {"tokens_per_s", s.tokens_per_s()},
        {"speedup_over", speedups},
        {"per_step_us",
         {{"moe", per_step_us(s.moe)},
          {"moe_forward", per_step_us(s.moe_forward)},
          {"dispatch", per_step_us(s.dispatch)},
          {"compute", per_step_us(s.compute)},
          {"combine", per_step_us(s.combine)},
          {"weight_exposed", per_step_us(s.weight_exposed)},
          {"combine_grad", per_step_us(s.combine_grad)},
          {"compute_grad", per_step_us(s.compute_grad)},
          {"dispatch_grad", per_step_us(s.dispatch_grad)},
          {"a2a_hidden", per_step_us(s.a2a_hidden)},
          {"grad_reduce", per_step_us(s.grad_reduce)},
          {"dense_grad_reduce", per_step_us(s.dense_grad_reduce)},
          {"dense_param_gather", per_step_us(s.dense_param_gather)},
          {"expert_grad_sync", per_step_us(s.expert_grad_sync)},
          {"expert_param_gather", per_step_us(s.expert_param_gather)},
          {"planner_overhead", per_step_us(s.overhead)},
          {"dense", per_step_us(s.dense)},
          {"dense_outside_moe_layers", per_step_us(s.outside)},
          {"optimizer", per_step_us(s.optimizer)},
          {"pipeline_idle", per_step_us(s.pipeline_idle)}}},
        {"per_step_bytes",
         {{"nvlink_dispatch", per_step_bytes(s.nvlink_dispatch_bytes)},
          {"ib_dispatch", per_step_bytes(s.ib_dispatch_bytes)},
          {"nvlink_weights", per_step_bytes(s.nvlink_weight_bytes)},
          {"ib_weights", per_step_bytes(s.ib_weight_bytes)},
          {"nvlink_grad_reduce", per_step_bytes(s.grad_reduce_nvlink_bytes)},
          {"ib_grad_reduce", per_step_bytes(s.grad_reduce_ib_bytes)},
          {"nvlink_dense_sync", per_step_bytes(s.dense_sync_nvlink_bytes)},
          {"ib_dense_sync", per_step_bytes(s.dense_sync_ib_bytes)},
          {"ib_expert_sync", per_step_bytes(s.expert_sync_ib_bytes)}}},
        {"peak_expert_activations",
         {{"token_assignments", s.peak_expert_tokens},
          {"bytes", s.peak_expert_activation_bytes()},
          {"stage_bytes", stage_activation_bytes}}},
        {"gpu_memory",
         {{"bytes", s.busiest_memory().total()},
          {"stage", s.busiest_memory_stage()},
          {"stages", stages}}},
        {"max_mean_load",
         {{"median", s.median_max_mean_load()},
          {"max", s.max_mean_loads.empty()
                      ? 1.0
                      : *std::max_element(s.max_mean_loads.begin(), s.max_mean_loads.end())}}}};
    if (index_of("ideal") >= 0) entry["percent_of_ideal"] = percent_of_ideal(static_cast<int>(p));
    planners.push_back(entry);
  }
  return {{"format", "topoep-simulation"}, {"version", 1}, {"run", run}, {"planners", planners}};
}

}  // namespace topoep
