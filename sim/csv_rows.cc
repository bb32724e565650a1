#include "sim/csv_rows.h"

#include <cstdio>

#include "sim/run_summary.h"
#include "solver/plan_encoding.h"

namespace topoep {
namespace {

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string join(const std::vector<std::string>& fields) {
  std::string line;
  for (const std::string& field : fields) line += (line.empty() ? "" : ",") + field;
  return line + "\n";
}

}  // namespace

std::string per_layer_csv_rows(const StepResult& step, const std::vector<std::string>& planners) {
  std::string rows;
  for (const RecordResult& record : step.records) {
    for (std::size_t p = 0; p < planners.size(); ++p) {
      const LayerCost& c = record.planners[p];
      rows += join({std::to_string(record.step),
                    std::to_string(record.microbatch),
                    std::to_string(record.layer),
                    planners[p],
                    format_us(c.moe()),
                    format_us(c.dispatch),
                    format_us(c.compute),
                    format_us(c.combine),
                    format_us(c.weight_exposed),
                    format_us(c.combine_grad),
                    format_us(c.compute_grad),
                    format_us(c.dispatch_grad),
                    format_us(c.grad_reduce),
                    format_us(c.dense_grad_reduce),
                    format_us(c.dense_param_gather),
                    format_us(c.expert_grad_sync),
                    format_us(c.expert_param_gather),
                    format_us(c.overhead),
                    format_us(c.dense_forward + c.outside_forward),
                    format_us(c.critical_path()),
                    fixed(c.max_mean_load, 6),
                    std::to_string(c.nvlink_dispatch_bytes),
                    std::to_string(c.ib_dispatch_bytes),
                    std::to_string(c.nvlink_weight_bytes),
                    std::to_string(c.ib_weight_bytes),
                    std::to_string(c.new_replicas),
                    planners[p] == "ideal" ? "" : format_plan_hash(c.plan_hash),
                    c.group < 0 ? "" : std::to_string(c.group),
                    format_us(c.a2a_hidden_forward + c.a2a_hidden_backward),
                    format_us(c.moe_forward()),
                    format_us(c.outside_forward)});
    }
  }
  return rows;
}

std::string rank_loads_csv_header(int num_ranks) {
  std::vector<std::string> fields = {"step", "microbatch", "layer", "planner"};
  for (int r = 0; r < num_ranks; ++r) fields.push_back("rank_" + std::to_string(r));
  return join(fields);
}

std::string rank_loads_csv_rows(const StepResult& step, const std::vector<std::string>& planners) {
  std::string rows;
  for (const RecordResult& record : step.records) {
    for (std::size_t p = 0; p < planners.size(); ++p) {
      const LayerCost& c = record.planners[p];
      if (c.loads.empty()) continue;
      std::vector<std::string> fields = {std::to_string(record.step),
                                         std::to_string(record.microbatch),
                                         std::to_string(record.layer), planners[p]};
      for (const TokenCount load : c.loads) fields.push_back(std::to_string(load));
      rows += join(fields);
    }
  }
  return rows;
}

std::string per_step_csv_header() {
  return "step,planner,step_time_us,tokens_per_s,moe_us,moe_forward_us,overhead_us,dense_us,"
         "grad_reduce_us,dense_grad_reduce_us,dense_param_gather_us,expert_grad_sync_us,"
         "expert_param_gather_us,optimizer_us,"
         "max_mean_load_mean,nvlink_dispatch_bytes,"
         "ib_dispatch_bytes,nvlink_weight_bytes,ib_weight_bytes,pipeline_idle_us,"
         "peak_expert_activation_bytes\n";
}

std::string per_step_csv_rows(const StepResult& step, const std::vector<std::string>& planners) {
  std::string rows;
  for (std::size_t p = 0; p < planners.size(); ++p) {
    const StepTotals& t = step.planners[p];
    rows += join({std::to_string(step.step),
                  planners[p],
                  format_us(t.step_time),
                  fixed(t.tokens_per_s, 1),
                  format_us(t.moe),
                  format_us(t.moe_forward),
                  format_us(t.overhead),
                  format_us(t.dense),
                  format_us(t.grad_reduce),
                  format_us(t.dense_grad_reduce),
                  format_us(t.dense_param_gather),
                  format_us(t.expert_grad_sync),
                  format_us(t.expert_param_gather),
                  format_us(t.optimizer),
                  fixed(t.max_mean_load_mean, 6),
                  std::to_string(t.nvlink_dispatch_bytes),
                  std::to_string(t.ib_dispatch_bytes),
                  std::to_string(t.nvlink_weight_bytes),
                  std::to_string(t.ib_weight_bytes),
                  format_us(t.pipeline_idle),
                  std::to_string(t.peak_expert_activation_bytes())});
  }
  return rows;
}

}  // namespace topoep
