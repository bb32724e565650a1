#include "sim/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/atomic_file.h"
#include "common/file_input_error.h"
#include "common/json_fields.h"
#include "common/progress.h"
#include "common/temp_path.h"
#include "common/text_list.h"
#include "sim/gpu_memory.h"
#include "sim/pipeline_layout.h"
#include "sim/pipeline_schedule.h"
#include "sim/run_summary.h"
#include "sim/solver_cost.h"
#include "solver/input_error.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string>& metric_columns() {
  static const std::vector<std::string> columns = {"step_time_us",
                                                   "tokens_per_s",
                                                   "speedup_vs_static",
                                                   "percent_of_ideal",
                                                   "moe_us_per_step",
                                                   "moe_forward_us_per_step",
                                                   "overhead_us_per_step",
                                                   "grad_reduce_us_per_step",
                                                   "dense_grad_reduce_us_per_step",
                                                   "dense_param_gather_us_per_step",
                                                   "expert_grad_sync_us_per_step",
                                                   "expert_param_gather_us_per_step",
                                                   "a2a_hidden_us_per_step",
                                                   "pipeline_idle_us_per_step",
                                                   "pipeline_peak_activations",
                                                   "peak_expert_activation_bytes",
                                                   "gpu_memory_bytes",
                                                   "loss_logits_bytes",
                                                   "token_buffer_bytes",
                                                   "deepep_buffer_bytes",
                                                   "attention_forward_efficiency",
                                                   "attention_backward_efficiency",
                                                   "max_mean_load_median",
                                                   "ib_bytes_per_step",
                                                   "nvlink_bytes_per_step",
                                                   "steps",
                                                   "records"};
  return columns;
}

class SummaryObserver : public ReplayObserver {
 public:
  explicit SummaryObserver(RunSummary& summary) : summary_(summary) {}
  void on_start(const TraceMetadata& metadata, const CostModel& cost) override {
    const SimOptions& options = cost.options();
    activations_ = pipeline_layout_activations(
        stage_layer_counts(metadata.num_layers, options.pipeline_chunks(), options.pipeline_layers),
        options.pipeline_stages, cost, metadata.microbatches);
    loss_logits_ = loss_logits_bytes(cost, metadata.num_layers);
  }
  void on_step(const StepResult& step) override { summary_.add(step); }
  // The most layer-microbatches of activations a stage of the run's pipeline holds at once.
  int activations() const { return activations_; }
  // What the loss's logits add for a moment on a GPU running it (gpu_memory.h).
  Bytes loss_logits() const { return loss_logits_; }

 private:
  RunSummary& summary_;
  int activations_ = 0;
  Bytes loss_logits_ = 0;
};

// How many of the rows' points ran eplb on a trace that ends before its first replan (the
// planner replans at the start of step eplb_period_steps, planners/eplb_planner.cc).
int count_eplb_home_points(const std::vector<nlohmann::json>& rows, const SweepGrid& grid) {
  std::map<int, int> period_of;  // point index -> eplb_period_steps
  for (const SweepPoint& point : grid.points) {
    period_of[point.index] = point.config.planner_options.eplb_period_steps;
  }
  int count = 0;
  for (const nlohmann::json& row : rows) {
    if (row.value("planner", "") != "eplb") continue;
    const auto steps = row.find("steps"), index = row.find("point");
    if (steps == row.end() || index == row.end() || !steps->is_number_integer() ||
        !index->is_number_integer()) {
      continue;
    }
    const auto period = period_of.find(index->get<int>());
    if (period != period_of.end() && steps->get<int>() <= period->second) ++count;
  }
  return count;
}

// Calls `visit(value, point)` for each TopoEP row of the shard that has a number in `metric`
// and its point's index.
template <typename Visit>
void each_topoep_metric(const std::vector<nlohmann::json>& rows, const char* metric,
                        Visit&& visit) {
  for (const nlohmann::json& row : rows) {
    if (row.value("planner", "") != "topoep") continue;
    const auto value = row.find(metric), index = row.find("point");
    if (value == row.end() || !value->is_number() || index == row.end() ||
        !index->is_number_integer()) {
      continue;
    }
    visit(value->get<double>(), index->get<int>());
  }
}

// The shard's points where TopoEP's step is longer than static's, and the slowest of them.
void note_topoep_behind_static(const std::vector<nlohmann::json>& rows, SweepReport* report) {
  each_topoep_metric(rows, "speedup_vs_static", [&](double speedup, int point) {
    if (speedup >= 1) return;
    ++report->topoep_behind_static_points;
    if (report->topoep_worst_point < 0 || speedup < report->topoep_worst_vs_static) {
      report->topoep_worst_vs_static = speedup;
      report->topoep_worst_point = point;
    }
  });
}

// How close the shard's TopoEP steps come to the ideal's (a bound no plan reaches: its records
// pay no weights, gradients or solves), on the points that ran both.
void note_topoep_against_ideal(const std::vector<nlohmann::json>& rows, SweepReport* report) {
  double log_sum = 0;
  each_topoep_metric(rows, "percent_of_ideal", [&](double percent, int point) {
    if (!(percent > 0)) return;
    ++report->topoep_ideal_points;
    log_sum += std::log(percent);
    if (report->topoep_least_ideal_point < 0 || percent < report->topoep_least_percent_of_ideal) {
      report->topoep_least_percent_of_ideal = percent;
      report->topoep_least_ideal_point = point;
    }
  });
  if (report->topoep_ideal_points > 0) {
    report->topoep_mean_percent_of_ideal = std::exp(log_sum / report->topoep_ideal_points);
  }
}

std::vector<nlohmann::json> simulate_point(const SweepPoint& point, bool check_plans) {
  std::string trace = point.trace_path;
  std::unique_ptr<TempPath> generated;
  if (trace.empty()) {
    generated = std::make_unique<TempPath>("topoep-sweep-point-" + std::to_string(point.index));
    write_synthetic_trace(point.synthetic, generated->path());
    trace = generated->path();
  }
  RunSummary summary(point.config.planners);
  SummaryObserver observer(summary);
  SimConfig config = point.config;
  config.check_plans = check_plans;
  replay_trace(trace, config, observer);
  std::vector<nlohmann::json> rows;
  const int fixed = summary.index_of("static");
  const AttentionEfficiency attention = attention_efficiency_at(config.topology, config.model);
  for (std::size_t p = 0; p < summary.planners().size(); ++p) {
    const PlannerRunSummary& s = summary.planners()[p];
    const double steps = std::max(1, s.steps);
    nlohmann::json row = {{"point", point.index}, {"point_key", point.key}};
    for (const auto& [key, value] : point.columns.items()) row[key] = value;
    row["planner"] = s.planner;
    row["step_time_us"] = s.step_time_us();
    row["tokens_per_s"] = s.tokens_per_s();
    row["speedup_vs_static"] =
        fixed >= 0 ? nlohmann::json(summary.speedup(static_cast<int>(p), fixed)) : nlohmann::json();
    row["percent_of_ideal"] = summary.index_of("ideal") >= 0
                                  ? nlohmann::json(summary.percent_of_ideal(static_cast<int>(p)))
                                  : nlohmann::json();
    row["moe_us_per_step"] = static_cast<double>(s.moe) / 1e6 / steps;
    row["moe_forward_us_per_step"] = static_cast<double>(s.moe_forward) / 1e6 / steps;
    row["overhead_us_per_step"] = static_cast<double>(s.overhead) / 1e6 / steps;
    row["grad_reduce_us_per_step"] = static_cast<double>(s.grad_reduce) / 1e6 / steps;
    row["dense_grad_reduce_us_per_step"] = static_cast<double>(s.dense_grad_reduce) / 1e6 / steps;
    row["dense_param_gather_us_per_step"] = static_cast<double>(s.dense_param_gather) / 1e6 / steps;
    row["expert_grad_sync_us_per_step"] = static_cast<double>(s.expert_grad_sync) / 1e6 / steps;
    row["expert_param_gather_us_per_step"] =
        static_cast<double>(s.expert_param_gather) / 1e6 / steps;
    row["a2a_hidden_us_per_step"] = static_cast<double>(s.a2a_hidden) / 1e6 / steps;
    row["pipeline_idle_us_per_step"] = static_cast<double>(s.pipeline_idle) / 1e6 / steps;
    row["pipeline_peak_activations"] = observer.activations();
    row["peak_expert_activation_bytes"] = s.peak_expert_activation_bytes();
    row["gpu_memory_bytes"] = s.busiest_memory().total();
    row["loss_logits_bytes"] = observer.loss_logits();
    row["token_buffer_bytes"] = s.busiest_memory().token_buffers;
    row["deepep_buffer_bytes"] = s.busiest_memory().deepep_buffers;
    row["attention_forward_efficiency"] = attention.forward;
    row["attention_backward_efficiency"] = attention.backward;
    row["max_mean_load_median"] = s.median_max_mean_load();
    row["ib_bytes_per_step"] =
        static_cast<double>(s.ib_dispatch_bytes + s.ib_weight_bytes + s.grad_reduce_ib_bytes) /
        steps;
    row["nvlink_bytes_per_step"] =
        static_cast<double>(s.nvlink_dispatch_bytes + s.nvlink_weight_bytes +
                            s.grad_reduce_nvlink_bytes) /
        steps;
    row["steps"] = s.steps;
    row["records"] = s.records;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string csv_cell(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (!value.is_string()) return value.dump();
  const std::string text = value.get<std::string>();
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

// Writes the rows, sorted by point then the grid's planner order, as JSON lines and CSV.
void write_results(std::vector<nlohmann::json> rows, const std::vector<std::string>& planners,
                   const std::string& base) {
  const auto planner_rank = [&](const nlohmann::json& row) {
    return std::find(planners.begin(), planners.end(), row["planner"].get<std::string>()) -
           planners.begin();
  };
  std::sort(rows.begin(), rows.end(), [&](const nlohmann::json& a, const nlohmann::json& b) {
    if (a["point"] != b["point"]) return a["point"].get<int>() < b["point"].get<int>();
    return planner_rank(a) < planner_rank(b);
  });
  std::vector<std::string> header = {"point"};
  for (const std::string& c : sweep_parameter_columns()) header.push_back(c);
  header.push_back("planner");
  for (const std::string& c : metric_columns()) header.push_back(c);
  AtomicFile jsonl(base + ".jsonl"), csv(base + ".csv");
  std::string line;
  for (const std::string& c : header) line += (line.empty() ? "" : ",") + c;
  csv.write(line + "\n");
  for (const nlohmann::json& row : rows) {
    jsonl.write(row.dump() + "\n");
    line.clear();
    for (std::size_t i = 0; i < header.size(); ++i) {
      line += (i == 0 ? "" : ",") + csv_cell(row.value(header[i], nlohmann::json()));
    }
    csv.write(line + "\n");
  }
  commit_all({&jsonl, &csv});
}

// Rows of a JSON-lines results file. With `repair`, a torn last line (a killed writer) is cut
// off the file; any other bad line is an error naming the file and line.
std::vector<nlohmann::json> read_rows(const std::string& path, bool repair) {
  std::string text = read_text_file(path);
  const std::size_t end = text.rfind('\n');
  const std::size_t whole = end == std::string::npos ? 0 : end + 1;
  if (whole != text.size()) {
    if (!repair) throw FileInputError(path, "", "ends in the middle of a line");
    fs::resize_file(path, whole);
    text.resize(whole);
  }
  std::vector<nlohmann::json> rows;
  std::size_t begin = 0;
  for (int line = 1; begin < text.size(); ++line) {
    const std::size_t stop = text.find('\n', begin);
    const std::string where = path + ":" + std::to_string(line);
    nlohmann::json row = parse_json_text(text.substr(begin, stop - begin), where);
    if (!row.is_object() || !row.contains("point_key") || !row["point_key"].is_string() ||
        !row.contains("planner") || !row.contains("point")) {
      throw FileInputError(where, "", "is not a sweep results row");
    }
    // Rows written before the dispatcher column were priced per assignment, and those written
    // before the dense gradients' all-reduce joined the step (2026-12-03) without it, and for
    // one expert-parallel group (before data_parallel), and EPLB's groups were one a node
    // (before eplb_groups), and no all-to-all ran behind compute (before a2a_overlap_fraction),
    // and every layer ran on one set of GPUs (before pipeline_stages), each stage one chunk
    // (before virtual_stages), by 1F1B (before pipeline_schedule), split evenly (before
    // pipeline_layers; "" is the even split).
    if (!row.contains("dispatcher")) row["dispatcher"] = "alltoall";
    if (!row.contains("a2a_overlap_fraction")) row["a2a_overlap_fraction"] = 0.0;
    if (!row.contains("a2a_hidden_us_per_step")) row["a2a_hidden_us_per_step"] = 0.0;
    if (!row.contains("pipeline_stages")) row["pipeline_stages"] = 1;
    if (!row.contains("virtual_stages")) row["virtual_stages"] = 1;
    if (!row.contains("pipeline_schedule")) row["pipeline_schedule"] = "1f1b";
    if (!row.contains("pipeline_layers")) row["pipeline_layers"] = "";
    if (!row.contains("pipeline_idle_us_per_step")) row["pipeline_idle_us_per_step"] = 0.0;
    // Not recorded before 2026-12-04, and not known without the trace: empty; the expert
    // activations were counted with the gated activation kept.
    if (!row.contains("pipeline_peak_activations")) row["pipeline_peak_activations"] = nullptr;
    if (!row.contains("peak_expert_activation_bytes"))
      row["peak_expert_activation_bytes"] = nullptr;
    if (!row.contains("recompute_moe_act")) row["recompute_moe_act"] = false;
    // Nor the memory a GPU holds before 2026-12-05, nor the optimizer state it was counted with.
    if (!row.contains("gpu_memory_bytes")) row["gpu_memory_bytes"] = nullptr;
    if (!row.contains("optimizer_state_bytes_per_param")) {
      row["optimizer_state_bytes_per_param"] = nullptr;
    }
    // Nor the dense activations in that memory (added later on 2026-12-05): a row without their
    // recomputation's columns counted none.
    if (!row.contains("recompute_layernorm")) {
      row["gpu_memory_bytes"] = nullptr;
      row["recompute_layernorm"] = false;
      row["recompute_mla_up_proj"] = false;
    }
    if (!row.contains("fp8_gemms")) row["fp8_gemms"] = false;  // every GEMM bf16 until 2026-12-05
    // Nor the output head's activations in that memory (counted since the MTP modules' column
    // came, later on 2026-12-05): a row without it counted none.
    if (!row.contains("mtp_layers")) {
      row["gpu_memory_bytes"] = nullptr;
      row["mtp_layers"] = 0;
    }
    // Nor the loss's logits, nor the experts' token buffers (both counted since 2026-12-06,
    // each with its column): emptied.
    for (const char* part : {"loss_logits_bytes", "token_buffer_bytes"}) {
      if (row.contains(part)) continue;
      row["gpu_memory_bytes"] = nullptr;
      row[part] = nullptr;
    }
    // Nor DeepEP's fixed buffers (counted since 2026-12-06, with their column): a DeepEP row's
    // memory is emptied; the other dispatchers' have none.
    if (!row.contains("deepep_buffer_bytes")) {
      const bool deepep = row.value("dispatcher", "") == "deepep";
      if (deepep) row["gpu_memory_bytes"] = nullptr;
      row["deepep_buffer_bytes"] = deepep ? nlohmann::json(nullptr) : nlohmann::json(0);
    }
    // Every row before 2026-12-05's last: no memory-bound kernel took time.
    if (!row.contains("memory_bound_kernels")) row["memory_bound_kernels"] = false;
    if (!row.contains("eplb_groups")) row["eplb_groups"] = "nodes";
    if (!row.contains("dense_grad_bytes")) row["dense_grad_bytes"] = 0;
    if (!row.contains("data_parallel")) row["data_parallel"] = 1;
    // TopoEP searched no IB-opened run before 2026-12-06: a per-assignment point's row from
    // before then is refused, naming the column, since its TopoEP plans changed.
    if (!row.contains("topoep_ib_opened_run")) row["topoep_ib_opened_run"] = 0;
    // Before the attention core's efficiencies were recorded (2026-12-06) its backward was
    // priced at twice its forward, both at the GEMMs' efficiency: every step time moved since,
    // and a resumed or merged sweep would mix the two.
    if (!row.contains("attention_backward_efficiency")) {
      throw FileInputError(where, "attention_backward_efficiency",
                           "is missing: the row was written before 2026-12-06, when the "
                           "attention core's backward still cost twice its forward at the "
                           "GEMMs' efficiency; rerun the sweep into another --out");
    }
    rows.push_back(std::move(row));
    begin = stop + 1;
  }
  return rows;
}

// Whether a point's rows name each of the grid's planners once (in any order).
bool one_row_per_planner(std::vector<std::string> names, std::vector<std::string> planners) {
  std::sort(names.begin(), names.end());
  std::sort(planners.begin(), planners.end());
  return names == planners;
}

// Rows grouped by point key; a point counts only with one row per planner of the grid.
std::map<std::string, std::vector<nlohmann::json>> complete_points(
    const std::vector<nlohmann::json>& rows, const std::vector<std::string>& planners) {
  std::map<std::string, std::vector<nlohmann::json>> by_key;
  for (const nlohmann::json& row : rows) by_key[row["point_key"].get<std::string>()].push_back(row);
  for (auto it = by_key.begin(); it != by_key.end();) {
    std::vector<std::string> names;
    for (const auto& row : it->second) names.push_back(row["planner"].get<std::string>());
    it = one_row_per_planner(names, planners) ? std::next(it) : by_key.erase(it);
  }
  return by_key;
}

// A row of `point` priced with other parameters than the grid now gives it (a default the
// toolkit changed since the row was written) would mix two models under one point key:
// refused, naming the first such parameter.
void check_row_matches_point(const nlohmann::json& row, const SweepPoint& point,
                             const std::string& path, const std::string& advice) {
  for (const std::string& column : sweep_parameter_columns()) {
    // Null: not recorded when the row was written (a column added since), so nothing to match.
    if (!row.contains(column) || row[column].is_null() || !point.columns.contains(column)) {
      continue;
    }
    if (row[column] != point.columns[column]) {
      throw FileInputError(path, column,
                           "holds point " + point.key + " priced with " + row[column].dump() +
                               ", where this grid prices it with " + point.columns[column].dump() +
                               " (a default changed since it was written)" + advice);
    }
  }
}

// A resumed sweep keeps the rows it finds and rewrites the results from them and the points it
// runs: a row of a point the grid (or this shard) no longer names, or of a planner it no longer
// compares, would be dropped from the results without a word. Refuses them instead, as it does
// a finished results file whose points lack a planner the grid compares. (A killed sweep's
// partial file may end in a point whose rows were not all written: that point runs again.)
void check_resumable(const std::vector<nlohmann::json>& rows, const std::string& path,
                     bool finished, const std::map<std::string, const SweepPoint*>& shard_points,
                     const std::vector<std::string>& planners) {
  const std::string advice = ": resume with the grid that wrote it, or use another --out";
  std::map<std::string, std::vector<std::string>> planners_of;
  for (const nlohmann::json& row : rows) {
    const std::string key = row["point_key"].get<std::string>();
    const std::string planner = row["planner"].is_string() ? row["planner"].get<std::string>() : "";
    const auto point = shard_points.find(key);
    if (point == shard_points.end()) {
      throw FileInputError(
          path, "", "holds point " + key + ", which this grid (or shard) does not name" + advice);
    }
    check_row_matches_point(row, *point->second, path, advice);
    if (std::find(planners.begin(), planners.end(), planner) == planners.end()) {
      throw FileInputError(path, "",
                           "holds planner '" + planner + "' for point " + key +
                               ", which this grid does not compare (" + join_names(planners) + ")" +
                               advice);
    }
    planners_of[key].push_back(planner);
  }
  if (!finished) return;
  for (auto& [key, found] : planners_of) {
    if (!one_row_per_planner(found, planners)) {
      std::sort(found.begin(), found.end());
      throw FileInputError(path, "",
                           "holds point " + key + " for planners " + join_names(found) +
                               ", this grid compares " + join_names(planners) + advice);
    }
  }
}

// "results-shard-I-of-N.jsonl" -> I, N.
bool parse_shard_file_name(const std::string& name, int* index, int* count) {
  const std::string prefix = "results-shard-", middle = "-of-", suffix = ".jsonl";
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  const std::string core = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  const std::size_t at = core.find(middle);
  if (at == std::string::npos) return false;
  const std::string i = core.substr(0, at), n = core.substr(at + middle.size());
  const auto digits = [](const std::string& text) {
    return !text.empty() && text.size() < 9 &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(i) || !digits(n)) return false;
  *index = std::stoi(i);
  *count = std::stoi(n);
  return true;
}

}  // namespace

void parse_shard(const std::string& text, SweepOptions* options) {
  const std::size_t slash = text.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    std::size_t used = 0;
    options->shard = std::stoi(text.substr(0, slash), &used);
    if (used != slash) throw std::invalid_argument("index");
    options->shards = std::stoi(text.substr(slash + 1), &used);
    if (used != text.size() - slash - 1) throw std::invalid_argument("count");
  } catch (const std::exception&) {
    throw InputError("--shard", "'" + text + "' is not I/N (e.g. 0/4)");
  }
  if (options->shards < 1 || options->shard < 0 || options->shard >= options->shards) {
    throw InputError("--shard", "'" + text + "': need 0 <= I < N");
  }
}

SweepReport run_sweep(const SweepGrid& grid, const SweepOptions& options) {
  if (options.threads < 1) throw InputError("--threads", "must be at least 1");
  if (options.shards < 1 || options.shard < 0 || options.shard >= options.shards) {
    throw InputError("--shard", "need 0 <= I < N");
  }
  std::error_code error;
  fs::create_directories(options.out_dir, error);
  if (error) throw FileInputError(options.out_dir, "", "cannot be created: " + error.message());
  const std::string base = options.out_dir + "/" +
                           (options.shards == 1 ? std::string("results")
                                                : "results-shard-" + std::to_string(options.shard) +
                                                      "-of-" + std::to_string(options.shards));
  SweepReport report;
  report.jsonl_path = base + ".jsonl";
  report.csv_path = base + ".csv";
  const std::string partial = base + ".partial.jsonl";

  std::map<std::string, const SweepPoint*> shard_points;  // this shard's points by key
  for (const SweepPoint& point : grid.points) {
    if (point.index % options.shards == options.shard) shard_points[point.key] = &point;
  }
  std::vector<nlohmann::json> kept;
  for (const std::string& path : {report.jsonl_path, partial}) {
    if (!fs::exists(path)) continue;
    if (!options.resume) {
      throw FileInputError(path, "",
                           "exists: pass --resume to continue that sweep, or another --out");
    }
    const std::vector<nlohmann::json> found = read_rows(path, path == partial);
    check_resumable(found, path, path != partial, shard_points, grid.planners);
    const auto points = complete_points(found, grid.planners);
    for (const auto& [key, rows] : points) kept.insert(kept.end(), rows.begin(), rows.end());
  }
  const auto done = complete_points(kept, grid.planners);

  std::vector<const SweepPoint*> pending;
  std::vector<nlohmann::json> rows;
  for (const SweepPoint& point : grid.points) {
    if (point.index % options.shards != options.shard) continue;
    ++report.points_in_shard;
    const auto it = done.find(point.key);
    if (it == done.end()) {
      pending.push_back(&point);
      continue;
    }
    ++report.points_skipped;
    for (nlohmann::json row : it->second) {
      row["point"] = point.index;  // the grid's numbering, should the grid have been reordered
      rows.push_back(std::move(row));
    }
  }

  std::FILE* log = std::fopen(partial.c_str(), "ab");
  if (log == nullptr) throw FileInputError(partial, "", "cannot be written");
  std::mutex mutex;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::vector<std::exception_ptr> errors(pending.size());
  ProgressBar progress("points", static_cast<std::int64_t>(pending.size()));
  std::int64_t finished = 0;
  bool write_failed = false;
  auto work = [&] {
    for (std::size_t i = next++; i < pending.size() && !stop; i = next++) {
      try {
        std::vector<nlohmann::json> point_rows = simulate_point(*pending[i], options.check_plans);
        std::string text;
        for (const nlohmann::json& row : point_rows) text += row.dump() + "\n";
        std::lock_guard<std::mutex> lock(mutex);
        // One write per point and a sync: the partial file only ever holds whole points.
        if (std::fwrite(text.data(), 1, text.size(), log) != text.size() || std::fflush(log) != 0 ||
            fsync(fileno(log)) != 0) {
          write_failed = true;
          stop = true;
        }
        rows.insert(rows.end(), point_rows.begin(), point_rows.end());
        ++report.points_run;
        progress.update(++finished);
      } catch (...) {
        errors[i] = std::current_exception();
        stop = true;
      }
    }
  };
  const int workers = std::max(1, std::min<int>(options.threads, static_cast<int>(pending.size())));
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& thread : threads) thread.join();
  std::fclose(log);
  if (write_failed) throw FileInputError(partial, "", "writing failed (disk full?)");
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const std::exception& e) {
      throw std::runtime_error("sweep point " + std::to_string(pending[i]->index) + " " +
                               pending[i]->key + ": " + e.what() +
                               " (finished points are kept: rerun with --resume)");
    }
  }
  report.eplb_home_points = count_eplb_home_points(rows, grid);
  note_topoep_behind_static(rows, &report);
  note_topoep_against_ideal(rows, &report);
  write_results(std::move(rows), grid.planners, base);
  fs::remove(partial, error);
  return report;
}

int merge_sweep(const SweepGrid& grid, const std::string& out_dir) {
  if (!fs::is_directory(out_dir)) throw FileInputError(out_dir, "", "is not a directory");
  std::map<int, std::string> shards;
  int count = -1;
  for (const auto& entry : fs::directory_iterator(out_dir)) {
    int index = 0, n = 0;
    if (!parse_shard_file_name(entry.path().filename().string(), &index, &n)) continue;
    if (count >= 0 && n != count) {
      throw FileInputError(
          entry.path().string(), "",
          "is a shard of " + std::to_string(n) + " but others are of " + std::to_string(count));
    }
    count = n;
    shards[index] = entry.path().string();
  }
  if (count < 0) throw FileInputError(out_dir, "", "holds no results-shard-I-of-N.jsonl files");
  for (int i = 0; i < count; ++i) {
    if (shards.count(i) == 0) {
      throw FileInputError(out_dir, "",
                           "shard " + std::to_string(i) + " of " + std::to_string(count) +
                               " is missing (results-shard-" + std::to_string(i) + "-of-" +
                               std::to_string(count) + ".jsonl)");
    }
  }
  std::map<std::string, std::vector<nlohmann::json>> by_key;
  for (const auto& [index, path] : shards) {
    for (nlohmann::json& row : read_rows(path, false)) {
      by_key[row["point_key"].get<std::string>()].push_back(std::move(row));
    }
  }
  std::vector<nlohmann::json> rows;
  for (const SweepPoint& point : grid.points) {
    auto it = by_key.find(point.key);
    if (it == by_key.end()) {
      throw FileInputError(
          out_dir, "",
          "point " + std::to_string(point.index) + " " + point.key + " is missing from the shards");
    }
    if (it->second.size() != grid.planners.size()) {
      throw FileInputError(
          out_dir, "",
          "point " + std::to_string(point.index) + " " + point.key + " has " +
              std::to_string(it->second.size()) + " rows, expected one per planner (" +
              std::to_string(grid.planners.size()) + "): duplicated or incomplete");
    }
    for (nlohmann::json& row : it->second) {
      check_row_matches_point(row, point, out_dir, ": rerun that point's shard");
      rows.push_back(std::move(row));
    }
    by_key.erase(it);
  }
  if (!by_key.empty()) {
    throw FileInputError(
        out_dir, "", "the shards hold a point the grid does not name: " + by_key.begin()->first);
  }
  write_results(rows, grid.planners, out_dir + "/results");
  return static_cast<int>(rows.size());
}

}  // namespace topoep
