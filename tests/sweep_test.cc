// Sweeps: the grid's points and errors, results independent of threads and sharding, merges
// that catch missing and duplicated shards, and resumes that lose nothing.

#include "sim/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/file_input_error.h"
#include "solver/input_error.h"
#include "tests/read_file.h"
#include "traces/synthetic_trace.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  const std::string path = (fs::path(::testing::TempDir()) / name).string();
  fs::remove_all(path);
  return path;
}

std::string write_grid(const std::string& name, const std::string& text) {
  const std::string path = temp_path(name);
  std::ofstream(path) << text;
  return path;
}

using testing::read_file;

// 2 x 3 x 2 = 12 points, three planners each, small synthetic DeepSeek-V3 routing.
const char* kGrid = R"({
  "planners": ["topoep", "static", "ideal"],
  "trace": [{"synthetic": {"steps": 2, "layers": 2, "tokens_per_rank": 128, "seed": 5}}],
  "nodes": [2, 4],
  "slots": [0, 1, 2],
  "ib_gb_per_s": [25, 50]
})";

std::string run(const SweepGrid& grid, const std::string& out, int threads, int shard = 0,
                int shards = 1, bool resume = false) {
  SweepOptions options;
  options.out_dir = out;
  options.threads = threads;
  options.shard = shard;
  options.shards = shards;
  options.resume = resume;
  return run_sweep(grid, options).jsonl_path;
}

// One metric of every row of the results file `jsonl`, in row order.
std::vector<double> column_of(const std::string& jsonl, const std::string& metric) {
  std::istringstream rows(read_file(jsonl));
  std::vector<double> values;
  for (std::string line; std::getline(rows, line);) {
    values.push_back(nlohmann::json::parse(line)[metric].get<double>());
  }
  return values;
}

std::string field_of_grid_error(const std::string& text) {
  try {
    load_sweep_grid(write_grid("bad_grid.json", text));
  } catch (const FileInputError& error) {
    return error.field();
  }
  return "no error";
}

// Axes vary in the documented key order (nodes, ib_gb_per_s, slots), the last fastest.
TEST(SweepGrid, RunsTheCrossProductLastAxisFastest) {
  const SweepGrid grid = load_sweep_grid(write_grid("grid.json", kGrid));
  ASSERT_EQ(grid.points.size(), 12u);
  EXPECT_EQ(grid.points[0].columns["nodes"], 2);
  EXPECT_EQ(grid.points[0].columns["slots"], 0);
  EXPECT_EQ(grid.points[0].columns["ib_gb_per_s"], 25.0);
  EXPECT_EQ(grid.points[1].columns["slots"], 1);
  EXPECT_EQ(grid.points[3].columns["ib_gb_per_s"], 50.0);
  EXPECT_EQ(grid.points[3].columns["slots"], 0);
  EXPECT_EQ(grid.points[6].columns["nodes"], 4);
  EXPECT_EQ(grid.points[6].config.topology.num_gpus(), 32);
  EXPECT_EQ(grid.points[0].columns["model"], "deepseek-v3");  // defaults fill the columns
}

TEST(SweepGrid, ListedPointsCombineWithEveryAxisValue) {
  const SweepGrid grid = load_sweep_grid(write_grid("points.json", R"({
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64}}],
    "slots": [0, 1],
    "points": [{"nodes": 2, "gpus_per_node": 8}, {"nodes": 1, "gpus_per_node": 16}]
  })"));
  ASSERT_EQ(grid.points.size(), 4u);
  EXPECT_EQ(grid.points[1].columns["gpus_per_node"], 16);
  EXPECT_EQ(grid.points[2].columns["slots"], 1);
}

TEST(SweepGrid, BadGridsNameTheKeyBeforeAnythingRuns) {
  EXPECT_EQ(field_of_grid_error(R"({"trace": ["x"], "nodez": [1]})"), "nodez");
  EXPECT_EQ(field_of_grid_error(R"({"trace": []})"), "trace");
  EXPECT_EQ(field_of_grid_error(R"({"nodes": [2]})"), "trace");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "slots": ["one"]})"), "slots[0]");
  // 256 experts do not divide over 3 x 8 GPUs, unless homes may be uneven (the first 16 home 11).
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "nodes": [3]})"), "nodes");
  EXPECT_EQ(field_of_grid_error(
                R"({"trace": [{"synthetic": {}}], "nodes": [3], "uneven_homes": [true]})"),
            "no error");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "uneven_homes": [1]})"),
            "uneven_homes[0]");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "slots": [300]})"), "slots");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "dispatcher": ["nccl"]})"),
            "dispatcher[0]");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "dispatcher": [1]})"),
            "dispatcher[0]");
  // 8,000,000 GPUs: beyond a trace's ranks, named by the key that set them.
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "nodes": [1000000]})"), "nodes");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"stepz": 1}}]})"),
            "trace.synthetic.stepz");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "planners": ["fast"]})"),
            "planners");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "points": [{"colour": 1}]})"),
            "points[0].colour");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "topoep_ib_load_slack": [2]})"),
            "topoep_ib_load_slack[0]");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "topoep_ib_opened_run": [2]})"),
            "topoep_ib_opened_run[0]");
  EXPECT_EQ(
      field_of_grid_error(R"({"trace": [{"synthetic": {}}], "topoep_ib_opened_run": [true]})"),
      "topoep_ib_opened_run[0]");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "topoep_replica_uses": [0]})"),
            "topoep_replica_uses[0]");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "topoep_max_moves": [-1]})"),
            "topoep_max_moves[0]");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "topoep_max_moves": [0.5]})"),
            "topoep_max_moves[0]");
  // Beyond 1e6 us a time overflowed its picoseconds: 1e308 us of solve was charged as none.
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "topoep_solve_us": [1e308]})"),
            "topoep_solve_us[0]");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "ib_latency_us": [1e300]})"),
            "ib_latency_us[0]");
  EXPECT_EQ(field_of_grid_error(
                R"({"trace": [{"synthetic": {}}], "points": [{"host_roundtrip_us": 2e6}]})"),
            "points[0].host_roundtrip_us");
}

// A planner option swept while none of its planners is compared would only repeat points.
TEST(SweepGrid, RefusesAPlannerOptionWithoutItsPlanner) {
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "planners": ["static", "eplb"],
                                    "topoep_ib_load_slack": [0, 0.05]})"),
            "topoep_ib_load_slack");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "planners": ["static"],
                                    "points": [{"host_roundtrip_us": 5}]})"),
            "host_roundtrip_us");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}],
                                    "planners": ["eplb-microbatch", "static"],
                                    "host_roundtrip_us": [5, 50]})"),
            "no error");
}

// Results are matched by point key (shards, resumes, merges): a grid naming one point twice, or
// a listed point setting an axis (which one would win?), fails before anything runs.
TEST(SweepGrid, RefusesAGridThatNamesAPointTwice) {
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "slots": [1, 2, 1]})"),
            "slots[2]");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "ib_gb_per_s": [25, 25.0]})"),
            "ib_gb_per_s[1]");
  EXPECT_EQ(field_of_grid_error(
                R"({"trace": [{"synthetic": {}}], "points": [{"slots": 2}, {"slots": 2}]})"),
            "points");
  EXPECT_EQ(field_of_grid_error(
                R"({"trace": [{"synthetic": {}}], "slots": [1], "points": [{"slots": 2}]})"),
            "points[0].slots");
  // A synthetic trace the trace format could not hold is refused here, not at its point's run.
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"layers": 65537}}]})"),
            "trace.synthetic.layers");
}

// TopoEP's planner options are axes too: each point's planners get them.
TEST(SweepGrid, SweepsTopoepsPlannerOptions) {
  const SweepGrid grid = load_sweep_grid(write_grid("topoep_options.json", R"({
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64}}],
    "topoep_ib_load_slack": [0, 0.05],
    "topoep_replica_uses": [1],
    "topoep_ib_opened_run": [0],
    "topoep_max_moves": [0, 16]
  })"));
  ASSERT_EQ(grid.points.size(), 4u);
  EXPECT_EQ(grid.points[0].config.planner_options.topoep_ib_opened_run, 0);
  EXPECT_EQ(grid.points[0].columns["topoep_ib_opened_run"], 0);
  EXPECT_EQ(grid.points[0].config.planner_options.topoep_ib_load_slack, 0.0);
  EXPECT_EQ(grid.points[2].config.planner_options.topoep_ib_load_slack, 0.05);
  EXPECT_EQ(grid.points[2].config.planner_options.topoep_replica_uses, 1);
  EXPECT_EQ(grid.points[2].columns["topoep_ib_load_slack"], 0.05);
  EXPECT_EQ(grid.points[0].config.planner_options.topoep_max_moves, 0);
  EXPECT_EQ(grid.points[1].config.planner_options.topoep_max_moves, 16);
  EXPECT_EQ(grid.points[1].columns["topoep_max_moves"], 16);
}

TEST(SweepGrid, SweepsTheDispatcher) {
  const SweepGrid grid = load_sweep_grid(write_grid("dispatchers.json", R"({
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64}}],
    "dispatcher": ["alltoall", "deepep"]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_EQ(grid.points[0].config.options.dispatcher, Dispatcher::kPerAssignment);
  EXPECT_EQ(grid.points[1].config.options.dispatcher, Dispatcher::kDeepEP);
  EXPECT_EQ(grid.points[1].columns["dispatcher"], "deepep");
  // TopoEP's slack, unset, follows the dispatcher; the column gives the one it plans with.
  EXPECT_EQ(grid.points[0].columns["topoep_ib_load_slack"], kTopoepIbSlackPerAssignment);
  EXPECT_EQ(grid.points[1].columns["topoep_ib_load_slack"], kTopoepIbSlackNodeDeduplicated);
  // So does its IB-opened run: on where every assignment crosses on its own, off under DeepEP.
  EXPECT_EQ(grid.points[0].columns["topoep_ib_opened_run"], 1);
  EXPECT_EQ(grid.points[1].columns["topoep_ib_opened_run"], 0);
  const SweepGrid plain = load_sweep_grid(write_grid("no_dispatcher.json", R"({
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64}}]
  })"));
  EXPECT_EQ(plain.points[0].columns["dispatcher"], "alltoall");
}

// The all-to-alls' overlap with compute: a fraction from 0 (the default) to 1.
TEST(SweepGrid, SweepsTheAllToAllOverlap) {
  const SweepGrid grid = load_sweep_grid(write_grid("a2a_overlap.json", R"({
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64}}],
    "a2a_overlap_fraction": [0, 0.5, 1]
  })"));
  ASSERT_EQ(grid.points.size(), 3u);
  EXPECT_EQ(grid.points[0].config.options.a2a_overlap_fraction, 0);
  EXPECT_EQ(grid.points[2].config.options.a2a_overlap_fraction, 1);
  EXPECT_EQ(grid.points[1].columns["a2a_overlap_fraction"], 0.5);
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "a2a_overlap_fraction": [1.5]})"),
            "a2a_overlap_fraction");
}

// Runs `grid` into `dir` and checks every row's `metric` is above 0 exactly where its
// `parameter` is above `off`; returns the rows where it is.
int rows_where_metric_follows(const SweepGrid& grid, const std::string& dir,
                              const std::string& parameter, double off, const std::string& metric) {
  std::istringstream rows(read_file(run(grid, temp_path(dir), 1)));
  int on_rows = 0;
  for (std::string line; std::getline(rows, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    const bool on = row[parameter].get<double>() > off;
    EXPECT_EQ(row[metric].get<double>() > 0, on) << line;
    on_rows += on;
  }
  return on_rows;
}

// Each row says how much of its all-to-alls ran behind compute: none without the overlap.
TEST(Sweep, RowsReportTheAllToAllTimeBehindCompute) {
  const SweepGrid grid = load_sweep_grid(write_grid("a2a_rows.json", R"({
    "planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "microbatches": 2, "layers": 1, "tokens_per_rank": 64}}],
    "a2a_overlap_fraction": [0, 1]
  })"));
  EXPECT_EQ(rows_where_metric_follows(grid, "sweep_a2a_rows", "a2a_overlap_fraction", 0,
                                      "a2a_hidden_us_per_step"),
            2);
}

// Pipeline stages: 1 (the default) to the trace's layers; each row says what of its step the
// stages wait, none on one stage.
TEST(Sweep, SweepsPipelineStagesAndReportsWhatTheyWait) {
  const SweepGrid grid = load_sweep_grid(write_grid("pipeline.json", R"({
    "planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "microbatches": 2, "layers": 2, "tokens_per_rank": 64}}],
    "pipeline_stages": [1, 2]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_EQ(grid.points[1].config.options.pipeline_stages, 2);
  EXPECT_EQ(grid.points[0].columns["pipeline_stages"], 1);
  EXPECT_EQ(rows_where_metric_follows(grid, "sweep_pipeline_rows", "pipeline_stages", 1,
                                      "pipeline_idle_us_per_step"),
            2);
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"layers": 2}}],
                                    "pipeline_stages": [3]})"),
            "pipeline_stages");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "pipeline_stages": [0]})"),
            "pipeline_stages[0]");
}

// Virtual stages: each stage's chunks, run by the interleaved schedule, which waits less than
// 1F1B on even chunks; refused on one stage and where the stages do not divide the microbatches.
TEST(Sweep, SweepsVirtualStagesWhichCutWhatTheStagesWait) {
  const SweepGrid grid = load_sweep_grid(write_grid("virtual.json", R"({
    "planners": ["static"],
    "trace": [{"synthetic": {"steps": 1, "microbatches": 4, "layers": 8, "tokens_per_rank": 64}}],
    "pipeline_stages": [2],
    "virtual_stages": [1, 2]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_EQ(grid.points[1].config.options.virtual_stages, 2);
  EXPECT_EQ(grid.points[0].columns["virtual_stages"], 1);
  const std::vector<double> idle =
      column_of(run(grid, temp_path("sweep_virtual_rows"), 1), "pipeline_idle_us_per_step");
  ASSERT_EQ(idle.size(), 2u);
  EXPECT_GT(idle[1], 0);
  EXPECT_LT(idle[1], idle[0]);
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"layers": 4}}],
                                    "virtual_stages": [2]})"),
            "virtual_stages");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"layers": 4, "microbatches": 3}}],
                                    "pipeline_stages": [2], "virtual_stages": [2]})"),
            "virtual_stages");
}

// The pipeline schedule: DualPipe and DualPipeV, which wait less than 1F1B; a name out of the
// three; DualPipe refused on an odd number of stages and on fewer than two microbatches a stage.
TEST(Sweep, SweepsThePipelineScheduleWhereDualPipeWaitsLess) {
  const SweepGrid grid = load_sweep_grid(write_grid("dualpipe.json", R"({
    "planners": ["static"],
    "trace": [{"synthetic": {"steps": 1, "microbatches": 4, "layers": 8, "tokens_per_rank": 64}}],
    "pipeline_stages": [2],
    "pipeline_schedule": ["1f1b", "dualpipe", "dualpipev"]
  })"));
  ASSERT_EQ(grid.points.size(), 3u);
  EXPECT_EQ(grid.points[1].config.options.pipeline_schedule, PipelineSchedule::kDualPipe);
  EXPECT_EQ(grid.points[0].columns["pipeline_schedule"], "1f1b");
  const std::string rows = run(grid, temp_path("sweep_dualpipe_rows"), 1);
  const std::vector<double> idle = column_of(rows, "pipeline_idle_us_per_step");
  ASSERT_EQ(idle.size(), 3u);
  EXPECT_LT(idle[1], idle[0]);
  EXPECT_LT(idle[2], idle[0]);
  // Activations on the busiest stage, in layer-microbatches (4 layers a chunk): 1F1B's stage 0
  // holds 2 microbatches of its chunk, DualPipe's P + 1, DualPipeV's 2P + 1 chunks of 2 layers.
  EXPECT_EQ(column_of(rows, "pipeline_peak_activations"), (std::vector<double>{8, 12, 10}));
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"layers": 4}}],
                                    "pipeline_schedule": ["zb"]})"),
            "pipeline_schedule[0]");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"layers": 4, "microbatches": 6}}],
                                    "pipeline_stages": [3], "pipeline_schedule": ["dualpipe"]})"),
            "pipeline_schedule");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"layers": 4, "microbatches": 2}}],
                                    "pipeline_stages": [2], "pipeline_schedule": ["dualpipe"]})"),
            "pipeline_schedule");
}

// The expert activations the busiest GPU holds: bytes a token assignment times its tokens,
// (h + 3f) x 2 kept or (h + 2f) x 2 with the gated activation recomputed, whose column says so.
TEST(Sweep, ReportsTheExpertActivationsTheBusiestGpuHoldsWithAndWithoutRecomputation) {
  const SweepGrid grid = load_sweep_grid(write_grid("recompute.json", R"({
    "planners": ["static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 2, "tokens_per_rank": 64}}],
    "recompute_moe_act": [false, true]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_FALSE(grid.points[0].config.options.recompute_moe_activation);
  EXPECT_TRUE(grid.points[1].config.options.recompute_moe_activation);
  EXPECT_EQ(grid.points[1].columns["recompute_moe_act"], true);
  const std::string rows = run(grid, temp_path("sweep_recompute_rows"), 1);
  const std::vector<double> bytes = column_of(rows, "peak_expert_activation_bytes");
  ASSERT_EQ(bytes.size(), 2u);
  const ModelSpec& model = grid.points[0].config.model;
  const double kept = model.hidden_size + 3.0 * model.expert_ffn_size;
  const double recomputed = model.hidden_size + 2.0 * model.expert_ffn_size;
  EXPECT_GT(bytes[0], 0);
  // The same tokens, fewer bytes each.
  EXPECT_DOUBLE_EQ(bytes[1] / bytes[0], recomputed / kept);
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "recompute_moe_act": ["yes"]})"),
            "recompute_moe_act[0]");
}

// Recomputing the norms holds less; recomputing MLA's up-projections holds less still and
// lengthens the step by the GEMMs it reruns; each column says which ran.
TEST(Sweep, RecomputingNormsAndUpProjectionsHoldsLessAndUpProjectionsTakeLonger) {
  const SweepGrid grid = load_sweep_grid(write_grid("recompute_dense.json", R"({
    "planners": ["static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 2, "tokens_per_rank": 64}}],
    "recompute_layernorm": [false, true], "recompute_mla_up_proj": [false, true]
  })"));
  ASSERT_EQ(grid.points.size(), 4u);
  ASSERT_TRUE(grid.points[0].config.model.multi_latent_attention());  // DeepSeek-V2-Lite's
  // The last axis varies fastest: (kept, kept), (kept, recomputed), (recomputed, kept), both.
  EXPECT_TRUE(grid.points[1].config.options.recompute_mla_up_proj);
  EXPECT_TRUE(grid.points[2].config.options.recompute_layernorm);
  EXPECT_EQ(grid.points[3].columns["recompute_layernorm"], true);
  EXPECT_EQ(grid.points[3].columns["recompute_mla_up_proj"], true);
  const std::string rows = run(grid, temp_path("sweep_recompute_dense_rows"), 1);
  const std::vector<double> memory = column_of(rows, "gpu_memory_bytes");
  const std::vector<double> step = column_of(rows, "step_time_us");
  ASSERT_EQ(memory.size(), 4u);
  EXPECT_LT(memory[1], memory[0]);
  EXPECT_LT(memory[2], memory[0]);
  EXPECT_LT(memory[3], std::min(memory[1], memory[2]));
  EXPECT_GT(step[1], step[0]);
  EXPECT_EQ(step[2], step[0]);  // the norms' elementwise pass is not charged
  EXPECT_EQ(step[3], step[1]);
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "recompute_layernorm": [1]})"),
            "recompute_layernorm[0]");
}

// FP8 GEMMs: a key that sets the model's precision, reported in its column; faster compute.
TEST(Sweep, Fp8GemmsShortenTheStepAndTheirColumnSaysSo) {
  const SweepGrid grid = load_sweep_grid(write_grid("fp8.json", R"({
    "planners": ["static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 2, "tokens_per_rank": 64}}],
    "fp8_gemms": [false, true]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_FALSE(grid.points[0].config.model.fp8_gemms);
  EXPECT_TRUE(grid.points[1].config.model.fp8_gemms);
  EXPECT_EQ(grid.points[1].columns["fp8_gemms"], true);
  const std::string rows = run(grid, temp_path("sweep_fp8_rows"), 1);
  const std::vector<double> step = column_of(rows, "step_time_us");
  ASSERT_EQ(step.size(), 2u);
  EXPECT_LT(step[1], step[0]);
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "fp8_gemms": ["fp8"]})"),
            "fp8_gemms[0]");
}

// What the busiest GPU holds: static reserves no spare slots, so what TopoEP holds beyond its
// activations is static's plus the slots' weights and gradients; the optimizer state a
// parameter moves the model state by that much a parameter the GPU updates.
TEST(Sweep, ReportsWhatTheBusiestGpuHoldsWithItsSpareSlotsAndOptimizerState) {
  const SweepGrid grid = load_sweep_grid(write_grid("memory.json", R"({
    "planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 2, "tokens_per_rank": 64}}],
    "slots": [2], "optimizer_state_bytes_per_param": [12, 8]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_EQ(grid.points[1].config.options.optimizer_state_bytes_per_param, 8);
  std::istringstream lines(read_file(run(grid, temp_path("sweep_memory_rows"), 1)));
  std::map<std::pair<int, std::string>, double> beyond_activations;
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    EXPECT_GT(row["peak_expert_activation_bytes"].get<double>(), 0);
    beyond_activations[{row["point"].get<int>(), row["planner"].get<std::string>()}] =
        row["gpu_memory_bytes"].get<double>() - row["peak_expert_activation_bytes"].get<double>();
  }
  ASSERT_EQ(beyond_activations.size(), 4u);
  const auto beyond = [&](int point, const char* planner) {
    return beyond_activations[std::make_pair(point, std::string(planner))];
  };
  const ModelSpec& model = grid.points[0].config.model;
  const int layers = 2;
  const double slots = 2.0 * layers * model.expert_params() * model.weight_bytes * 2;
  for (const int point : {0, 1}) {
    EXPECT_DOUBLE_EQ(beyond(point, "topoep") - beyond(point, "static"), slots);
  }
  // One stage, every GPU updating all it holds: its layers' dense parameters and home experts.
  const int gpus = grid.points[0].config.topology.num_gpus();
  const double homes = (model.num_experts + gpus - 1) / gpus * model.expert_params();
  const double held = layers * (model.dense_and_shared_params() + homes);
  EXPECT_NEAR(beyond(0, "static") - beyond(1, "static"), 4 * held, 1);
}

// Each stage's layers: a list that sets the stages where the point does not, written as the
// command line takes it (empty for the even split); a list that does not fit is refused.
TEST(Sweep, SweepsEachStagesLayersWhichSetTheStages) {
  const SweepGrid grid = load_sweep_grid(write_grid("layers.json", R"({
    "planners": ["static"],
    "trace": [{"synthetic": {"steps": 1, "microbatches": 2, "layers": 4, "tokens_per_rank": 64}}],
    "points": [{"pipeline_layers": [1, 3]}, {"pipeline_layers": [2, 2]}, {"pipeline_stages": 2},
               {"pipeline_layers": [1, 1, 1, 1], "virtual_stages": 2}]
  })"));
  ASSERT_EQ(grid.points.size(), 4u);
  EXPECT_EQ(grid.points[0].config.options.pipeline_stages, 2);
  EXPECT_EQ(grid.points[0].config.options.pipeline_layers, (std::vector<int>{1, 3}));
  EXPECT_EQ(grid.points[0].columns["pipeline_layers"], "1,3");
  EXPECT_EQ(grid.points[2].columns["pipeline_layers"], "");
  EXPECT_EQ(grid.points[3].config.options.pipeline_stages, 2);
  const std::string dir = temp_path("sweep_layers_rows");
  const std::vector<double> steps = column_of(run(grid, dir, 1), "step_time_us");
  const std::string csv = read_file(dir + "/results.csv");
  EXPECT_NE(csv.find(",\"1,3\","), std::string::npos) << csv;
  // The even split of 4 layers over 2 stages is 2, 2: the same step as listing it.
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[1], steps[2]);
  EXPECT_NE(steps[0], steps[1]);
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"layers": 4}}],
                                    "pipeline_layers": [[1, 0, 3]]})"),
            "pipeline_layers[0]");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"layers": 4}}],
                                    "pipeline_layers": [[1, 1]]})"),
            "pipeline_layers");
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {"layers": 4}}],
                                    "pipeline_stages": [3], "pipeline_layers": [[2, 2]]})"),
            "pipeline_layers");
}

// The data-parallel sync's axes: a name out of the two, 0 to 8 bytes (0 leaves it out), and 1 to
// 65,536 expert-parallel groups.
TEST(SweepGrid, DenseSyncAxesAreChecked) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("dense_sync": ["zero3"])", "dense_sync[0]"},
      {R"("dense_sync": [2])", "dense_sync[0]"},
      {R"("dense_grad_bytes": [9])", "dense_grad_bytes"},
      {R"("dense_grad_bytes": [-1])", "dense_grad_bytes[0]"},
      {R"("dense_grad_bytes": [0], "dense_sync": ["distributed"])", "no error"},
      {R"("data_parallel": [0])", "data_parallel[0]"},
      {R"("data_parallel": [70000])", "data_parallel"},
      {R"("data_parallel": [1.5])", "data_parallel[0]"},
  };
  for (const auto& [axis, field] : cases) {
    EXPECT_EQ(field_of_grid_error(std::string(R"({"trace": [{"synthetic": {}}], )") + axis + "}"),
              field)
        << axis;
  }
}

TEST(SweepGrid, SweepsTheDenseSync) {
  const SweepGrid grid = load_sweep_grid(write_grid("dense_syncs.json", R"({
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64}}],
    "dense_sync": ["allreduce", "distributed"], "dense_grad_bytes": [0, 4]
  })"));
  ASSERT_EQ(grid.points.size(), 4u);
  EXPECT_EQ(grid.points[0].config.options.dense_sync, DenseSync::kAllReduce);
  EXPECT_EQ(grid.points[0].config.options.dense_grad_bytes, 0);
  EXPECT_EQ(grid.points[3].config.options.dense_sync, DenseSync::kDistributedOptimizer);
  EXPECT_EQ(grid.points[3].config.options.dense_grad_bytes, 4);
  EXPECT_EQ(grid.points[3].columns["dense_sync"], "distributed");
  EXPECT_EQ(grid.points[3].columns["data_parallel"], 1);
}

// EPLB's expert groups: "nodes", "model" or a count, as simulate --eplb-groups takes them.
TEST(SweepGrid, SweepsEplbsExpertGroups) {
  const SweepGrid grid = load_sweep_grid(write_grid("eplb_groups.json", R"({
    "planners": ["eplb-microbatch", "static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64}}],
    "eplb_groups": ["nodes", "model", 8]
  })"));
  ASSERT_EQ(grid.points.size(), 3u);
  EXPECT_EQ(grid.points[0].config.planner_options.eplb_groups, kEplbGroupsPerNode);
  EXPECT_EQ(grid.points[1].config.planner_options.eplb_groups, kEplbGroupsOfModel);
  EXPECT_EQ(grid.points[2].config.planner_options.eplb_groups, 8);
  EXPECT_EQ(grid.points[1].columns["eplb_groups"], "model");
  EXPECT_EQ(grid.points[2].columns["eplb_groups"], "8");
  for (const char* bad : {R"(["all"])", "[0]", "[1.5]", "[true]"}) {
    EXPECT_EQ(field_of_grid_error(std::string(R"({"planners": ["eplb", "static"], )"
                                              R"("trace": [{"synthetic": {}}], "eplb_groups": )") +
                                  bad + "}"),
              "eplb_groups[0]")
        << bad;
  }
}

TEST(SweepGrid, SweepsTheDataParallelGroups) {
  const SweepGrid grid = load_sweep_grid(write_grid("data_parallel.json", R"({
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64}}],
    "data_parallel": [1, 4]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_EQ(grid.points[0].config.options.data_parallel, 1);
  EXPECT_EQ(grid.points[1].config.options.data_parallel, 4);
  EXPECT_EQ(grid.points[1].columns["data_parallel"], 4);
}

// A synthetic trace with groups_apart routes each data-parallel group on its own: D x the GPUs
// as ranks (one group: the GPUs').
TEST(SweepGrid, SyntheticGroupsApartGiveEachGroupItsOwnRanks) {
  const SweepGrid grid = load_sweep_grid(write_grid("groups_apart.json", R"({
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64,
                             "groups_apart": true}}],
    "data_parallel": [1, 3]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_EQ(grid.points[0].synthetic.num_ranks, 32);
  EXPECT_EQ(grid.points[1].synthetic.num_ranks, 96);
  EXPECT_EQ(field_of_grid_error(
                R"({"trace": [{"synthetic": {"groups_apart": 1}}], "data_parallel": [2]})"),
            "trace.synthetic.groups_apart");
}

// Without a model axis a recorded trace is priced with the one preset of its experts and top-k,
// as `topoep simulate` prices it; a trace no preset fits asks for the axis.
TEST(SweepGrid, ARecordedTraceWithoutAModelAxisTakesThePresetItFits) {
  SyntheticTraceSpec lite;
  lite.num_experts = 64;
  lite.top_k = 6;
  lite.num_layers = 1;
  lite.steps = 1;
  lite.microbatches = 1;
  lite.tokens_per_rank = 64;
  const std::string lite_trace = temp_path("lite.trace");
  write_synthetic_trace(lite, lite_trace, 1);
  const SweepGrid grid = load_sweep_grid(
      write_grid("implied_model.json", R"({"trace": [")" + lite_trace + R"("], "slots": [0, 1]})"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_EQ(grid.points[0].config.model.name, "deepseek-v2-lite");
  EXPECT_EQ(grid.points[1].columns["model"], "deepseek-v2-lite");

  SyntheticTraceSpec odd = lite;
  odd.num_experts = 96;
  const std::string odd_trace = temp_path("odd.trace");
  write_synthetic_trace(odd, odd_trace, 1);
  EXPECT_EQ(field_of_grid_error(R"({"trace": [")" + odd_trace + R"("]})"), "trace");
}

TEST(Sweep, ResultsDoNotDependOnThreadsOrShards) {
  const SweepGrid grid = load_sweep_grid(write_grid("grid.json", kGrid));
  const std::string dir1 = temp_path("sweep_t1");
  const std::string one = read_file(run(grid, dir1, 1));
  EXPECT_EQ(std::count(one.begin(), one.end(), '\n'), 12 * 3);
  EXPECT_EQ(read_file(run(grid, temp_path("sweep_t2"), 2)), one);
  const std::string sharded = temp_path("sweep_shards");
  for (int shard = 0; shard < 3; ++shard) run(grid, sharded, 2, shard, 3);
  EXPECT_EQ(merge_sweep(grid, sharded), 12 * 3);
  EXPECT_EQ(read_file(sharded + "/results.jsonl"), one);
  EXPECT_EQ(read_file(sharded + "/results.csv"), read_file(dir1 + "/results.csv"));
}

TEST(Sweep, MergeCatchesMissingAndDuplicatedShards) {
  const SweepGrid grid = load_sweep_grid(write_grid("grid.json", kGrid));
  const std::string dir = temp_path("sweep_merge");
  for (int shard = 0; shard < 2; ++shard) run(grid, dir, 1, shard, 2);
  const std::string shard1 = dir + "/results-shard-1-of-2.jsonl";
  const std::string kept = read_file(shard1);
  fs::remove(shard1);
  EXPECT_THROW(merge_sweep(grid, dir), FileInputError);
  // Shard 0's first point also in shard 1: duplicated.
  const std::string shard0 = read_file(dir + "/results-shard-0-of-2.jsonl");
  std::ofstream(shard1) << kept << shard0.substr(0, shard0.find('\n') + 1);
  EXPECT_THROW(merge_sweep(grid, dir), FileInputError);
  std::ofstream(shard1) << kept;
  EXPECT_EQ(merge_sweep(grid, dir), 12 * 3);
}

TEST(Sweep, ResumeRunsOnlyWhatAKilledSweepLostAndRepairsATornLine) {
  const SweepGrid grid = load_sweep_grid(write_grid("grid.json", kGrid));
  const std::string full = read_file(run(grid, temp_path("sweep_full"), 2));
  // A sweep killed after its first point, in the middle of writing the second.
  const std::string dir = temp_path("sweep_killed");
  fs::create_directories(dir);
  std::size_t three_lines = 0;
  for (int i = 0; i < 3; ++i) three_lines = full.find('\n', three_lines) + 1;
  std::ofstream(dir + "/results.partial.jsonl")
      << full.substr(0, three_lines) << "{\"point\": 1, \"po";
  EXPECT_THROW(run(grid, dir, 2), FileInputError);  // outputs exist: --resume is needed
  SweepOptions options;
  options.out_dir = dir;
  options.threads = 2;
  options.resume = true;
  const SweepReport report = run_sweep(grid, options);
  EXPECT_EQ(report.points_skipped, 1);
  EXPECT_EQ(report.points_run, 11);
  EXPECT_EQ(read_file(report.jsonl_path), full);
  EXPECT_FALSE(fs::exists(dir + "/results.partial.jsonl"));
}

// The report counts the points where TopoEP's step is longer than static's and names the
// slowest: DeepEP's sends at 256 tokens a GPU on 16 GPUs (sim/README.md, "Against the paper"),
// not per assignment.
TEST(Sweep, ReportNamesThePointsWhereTopoepTrailsStatic) {
  const SweepGrid grid = load_sweep_grid(write_grid("behind_static.json", R"({
    "planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 2, "microbatches": 4, "layers": 4, "seed": 1,
                             "tokens_per_rank": 256}}],
    "topology": ["h800-4x8"], "nodes": [2], "model": ["deepseek-v2-lite"],
    "dispatcher": ["alltoall", "deepep"]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  ASSERT_EQ(grid.points[1].columns["dispatcher"], "deepep");
  SweepOptions options;
  options.out_dir = temp_path("sweep_behind_static");
  options.threads = 1;
  const SweepReport report = run_sweep(grid, options);
  EXPECT_EQ(report.topoep_behind_static_points, 1);
  EXPECT_EQ(report.topoep_worst_point, 1);
  EXPECT_LT(report.topoep_worst_vs_static, 1.0);
  const std::vector<double> speedups = column_of(report.jsonl_path, "speedup_vs_static");
  EXPECT_DOUBLE_EQ(*std::min_element(speedups.begin(), speedups.end()),
                   report.topoep_worst_vs_static);
}

TEST(Sweep, ReportSaysHowCloseTopoepComesToTheIdeal) {
  const char* text = R"({
    "planners": ["topoep", "static", "ideal"],
    "trace": [{"synthetic": {"steps": 1, "microbatches": 2, "layers": 2, "seed": 3,
                             "tokens_per_rank": 256, "hot_ratio": 5}}],
    "topology": ["h800-4x8"], "nodes": [2], "model": ["deepseek-v2-lite"], "slots": [0, 1, 2]
  })";
  SweepOptions options;
  options.out_dir = temp_path("sweep_against_ideal");
  options.threads = 1;
  const SweepReport report = run_sweep(load_sweep_grid(write_grid("ideal.json", text)), options);
  std::istringstream rows(read_file(report.jsonl_path));
  std::map<int, double> percent_of;  // TopoEP's percent_of_ideal by point
  for (std::string line; std::getline(rows, line);) {
    const nlohmann::json row = nlohmann::json::parse(line);
    if (row["planner"] == "topoep") percent_of[row["point"]] = row["percent_of_ideal"];
  }
  ASSERT_EQ(percent_of.size(), 3u);
  std::vector<double> percents;
  for (const auto& [point, percent] : percent_of) percents.push_back(percent);
  const auto least = std::min_element(percents.begin(), percents.end());
  const int least_point = static_cast<int>(least - percents.begin());
  EXPECT_EQ(report.topoep_ideal_points, 3);
  double log_sum = 0;
  for (const double percent : percents) log_sum += std::log(percent);
  EXPECT_NEAR(report.topoep_mean_percent_of_ideal, std::exp(log_sum / 3), 1e-9);
  EXPECT_DOUBLE_EQ(report.topoep_least_percent_of_ideal, *least);
  EXPECT_EQ(report.topoep_least_ideal_point, least_point);
  // The ideal is a bound: no point above it, and this skewed routing keeps TopoEP below it.
  for (const double percent : percents) EXPECT_LE(percent, 100.0);
  EXPECT_LT(report.topoep_least_percent_of_ideal, 100.0);

  // A grid without the ideal reports nothing against it.
  const SweepReport without = run_sweep(load_sweep_grid(write_grid("no_ideal.json", R"({
    "planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64, "seed": 5}}],
    "nodes": [2]})")),
                                        SweepOptions{temp_path("sweep_no_ideal")});
  EXPECT_EQ(without.topoep_ideal_points, 0);
  EXPECT_EQ(without.topoep_least_ideal_point, -1);
}

// Resuming with a grid that adds points runs only those; a grid that drops a point or changes
// the planners would drop finished rows from the results, and is refused before anything runs.
TEST(Sweep, ResumeKeepsEveryFinishedRowOrRefuses) {
  const char* small = R"({"planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64, "seed": 5}}],
    "nodes": [2], "slots": [0, 1]})";
  const char* grown = R"({"planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64, "seed": 5}}],
    "nodes": [2], "slots": [0, 1, 2]})";
  const char* shrunk = R"({"planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64, "seed": 5}}],
    "nodes": [2], "slots": [1, 2]})";
  const char* more_planners = R"({"planners": ["topoep", "static", "eplb"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64, "seed": 5}}],
    "nodes": [2], "slots": [0, 1, 2]})";
  const std::string dir = temp_path("sweep_regrid");
  run(load_sweep_grid(write_grid("small.json", small)), dir, 1);
  SweepOptions options;
  options.out_dir = dir;
  options.resume = true;
  const SweepReport report = run_sweep(load_sweep_grid(write_grid("grown.json", grown)), options);
  EXPECT_EQ(report.points_skipped, 2);
  EXPECT_EQ(report.points_run, 1);
  const std::string results = read_file(report.jsonl_path);
  EXPECT_EQ(read_file(run(load_sweep_grid(write_grid("grown.json", grown)),
                          temp_path("sweep_regrid_fresh"), 1)),
            results);
  for (const char* grid : {shrunk, more_planners}) {
    EXPECT_THROW(run_sweep(load_sweep_grid(write_grid("changed.json", grid)), options),
                 FileInputError);
    EXPECT_EQ(read_file(report.jsonl_path), results);  // untouched
  }
}

// Rewrites DIR/results.jsonl from `fresh` rows without `columns`, as a version of the toolkit
// before those columns wrote it; returns what it wrote.
std::string write_rows_as_an_earlier_version_did(const std::string& dir, const std::string& fresh,
                                                 std::initializer_list<const char*> columns) {
  std::string old_rows;
  std::istringstream lines(fresh);
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json row = nlohmann::json::parse(line);
    for (const char* column : columns) row.erase(column);
    old_rows += row.dump() + "\n";
  }
  std::ofstream(dir + "/results.jsonl", std::ios::trunc) << old_rows;
  return old_rows;
}

SweepOptions resume_options(const std::string& dir) {
  SweepOptions options;
  options.out_dir = dir;
  options.resume = true;
  return options;
}

// Results written before the dispatcher column existed were priced per assignment (and before
// the all-to-alls could run behind compute, with none of them there, and before pipeline
// stages, on one set of GPUs): a resume keeps their rows
// and fills the columns, as a fresh run writes them.
TEST(Sweep, ResumeFillsTheDispatcherEplbGroupsAndOverlapOfRowsWrittenBeforeThem) {
  const char* grid = R"({"planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64, "seed": 5}}],
    "nodes": [2], "slots": [0, 1]})";
  const std::string dir = temp_path("sweep_old_rows");
  const std::string fresh = read_file(run(load_sweep_grid(write_grid("old.json", grid)), dir, 1));
  write_rows_as_an_earlier_version_did(
      dir, fresh,
      {"dispatcher", "eplb_groups", "a2a_overlap_fraction", "a2a_hidden_us_per_step",
       "pipeline_stages", "virtual_stages", "pipeline_schedule", "pipeline_layers",
       "pipeline_idle_us_per_step", "recompute_moe_act"});
  const SweepReport report =
      run_sweep(load_sweep_grid(write_grid("old.json", grid)), resume_options(dir));
  EXPECT_EQ(report.points_run, 0);
  EXPECT_EQ(read_file(report.jsonl_path), fresh);
  EXPECT_NE(read_file(dir + "/results.csv").find(",alltoall,"), std::string::npos);
}

// One static point's row as a fresh run writes it, and as a resume leaves it after an earlier
// version wrote it without `columns`.
std::pair<nlohmann::json, nlohmann::json> row_fresh_and_resumed_without(
    const std::string& name, std::initializer_list<const char*> columns,
    const std::string& dispatcher = "alltoall") {
  const std::string grid = R"({"planners": ["static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64, "seed": 5}}],
    "nodes": [2], "dispatcher": [")" +
                           dispatcher + R"("]})";
  const std::string dir = temp_path(name);
  run(load_sweep_grid(write_grid(name + ".json", grid)), dir, 1);
  const std::string fresh = read_file(dir + "/results.jsonl");
  write_rows_as_an_earlier_version_did(dir, fresh, columns);
  const SweepReport report =
      run_sweep(load_sweep_grid(write_grid(name + ".json", grid)), resume_options(dir));
  EXPECT_EQ(report.points_run, 0);
  return {nlohmann::json::parse(fresh), nlohmann::json::parse(read_file(report.jsonl_path))};
}

// Results written before the activations (and what a GPU holds) were recorded resume with them
// empty: they are not known without the trace.
TEST(Sweep, ResumeLeavesTheActivationsOfRowsWrittenBeforeThemEmpty) {
  const auto [fresh, row] = row_fresh_and_resumed_without(
      "sweep_rows_before_activations", {"pipeline_peak_activations", "peak_expert_activation_bytes",
                                        "gpu_memory_bytes", "optimizer_state_bytes_per_param"});
  EXPECT_TRUE(row["pipeline_peak_activations"].is_null());
  EXPECT_TRUE(row["peak_expert_activation_bytes"].is_null());
  EXPECT_TRUE(row["gpu_memory_bytes"].is_null());
  EXPECT_TRUE(row["optimizer_state_bytes_per_param"].is_null());
  EXPECT_GT(fresh["peak_expert_activation_bytes"].get<double>(), 0);
}

// Rows written before the dense activations joined what a GPU holds (2026-12-05) counted a
// GPU's memory without them: a resume keeps their rows with that memory empty and nothing
// recomputed.
TEST(Sweep, ResumeEmptiesTheMemoryOfRowsWrittenBeforeTheDenseActivations) {
  const auto [fresh, row] = row_fresh_and_resumed_without(
      "sweep_rows_before_dense_activations", {"recompute_layernorm", "recompute_mla_up_proj"});
  EXPECT_GT(fresh["gpu_memory_bytes"].get<double>(), 0);
  EXPECT_TRUE(row["gpu_memory_bytes"].is_null());
  EXPECT_EQ(row["recompute_layernorm"], false);
  EXPECT_EQ(row["recompute_mla_up_proj"], false);
}

// Rows written before a part joined what a GPU holds with its column (the loss's logits, of
// one microbatch at the trace's share of the model's end, and the experts' token buffers: both
// 2026-12-06) counted its memory without it: emptied, the part's column too.
TEST(Sweep, ResumeEmptiesTheMemoryOfRowsWrittenBeforeTheLossLogitsOrTheTokenBuffers) {
  for (const char* part : {"loss_logits_bytes", "token_buffer_bytes"}) {
    SCOPED_TRACE(part);
    const auto [fresh, row] =
        row_fresh_and_resumed_without(std::string("sweep_rows_before_") + part, {part});
    EXPECT_GT(fresh["gpu_memory_bytes"].get<double>(), 0);
    EXPECT_GT(fresh[part].get<double>(), 0);
    EXPECT_TRUE(row["gpu_memory_bytes"].is_null());
    EXPECT_TRUE(row[part].is_null());
  }
}

// Rows written before DeepEP's fixed buffers joined what a GPU holds (2026-12-06, with their
// column): a DeepEP row's memory is emptied; another dispatcher's had none to count.
TEST(Sweep, ResumeEmptiesTheMemoryOfDeepepRowsWrittenBeforeItsBuffers) {
  const auto [fresh, row] = row_fresh_and_resumed_without("sweep_deepep_rows_before_buffers",
                                                          {"deepep_buffer_bytes"}, "deepep");
  EXPECT_GT(fresh["deepep_buffer_bytes"].get<double>(), 0);
  EXPECT_TRUE(row["gpu_memory_bytes"].is_null());
  EXPECT_TRUE(row["deepep_buffer_bytes"].is_null());
  const auto [fresh_a2a, row_a2a] =
      row_fresh_and_resumed_without("sweep_alltoall_rows_before_buffers", {"deepep_buffer_bytes"});
  EXPECT_EQ(fresh_a2a["deepep_buffer_bytes"], 0);
  EXPECT_EQ(row_a2a["gpu_memory_bytes"], fresh_a2a["gpu_memory_bytes"]);
  EXPECT_EQ(row_a2a["deepep_buffer_bytes"], 0);
}

// Rows written before the output head's activations joined what a GPU holds (the MTP modules'
// column came with them, 2026-12-05) counted its memory without them: emptied, no module.
TEST(Sweep, ResumeEmptiesTheMemoryOfRowsWrittenBeforeTheHeadsActivations) {
  const auto [fresh, row] =
      row_fresh_and_resumed_without("sweep_rows_before_head_activations", {"mtp_layers"});
  EXPECT_GT(fresh["gpu_memory_bytes"].get<double>(), 0);
  EXPECT_EQ(fresh["mtp_layers"], 0);
  EXPECT_TRUE(row["gpu_memory_bytes"].is_null());
  EXPECT_EQ(row["mtp_layers"], 0);
}

// An MTP module: the last stage runs its projection and head pass, so the step is longer and
// the column says how many; a value out of range is named.
TEST(Sweep, AnMtpModuleLengthensTheStepAndItsColumnSaysSo) {
  const SweepGrid grid = load_sweep_grid(write_grid("mtp.json", R"({
    "planners": ["static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 2, "tokens_per_rank": 64}}],
    "mtp_layers": [0, 1]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_EQ(grid.points[1].config.options.mtp_layers, 1);
  EXPECT_EQ(grid.points[1].columns["mtp_layers"], 1);
  const std::vector<double> step =
      column_of(run(grid, temp_path("sweep_mtp_rows"), 1), "step_time_us");
  ASSERT_EQ(step.size(), 2u);
  EXPECT_GT(step[1], step[0]);
  EXPECT_EQ(field_of_grid_error(R"({"trace": [{"synthetic": {}}], "mtp_layers": [true]})"),
            "mtp_layers[0]");
}

// The memory-bound kernels: every token's norms, activations and permutations take HBM time, so
// the step is longer and the column says so; rows written before it priced none; a value not
// true or false is named.
TEST(Sweep, MemoryBoundKernelsLengthenTheStepAndTheirColumnSaysSo) {
  const SweepGrid grid = load_sweep_grid(write_grid("kernels.json", R"({
    "planners": ["static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 2, "tokens_per_rank": 64}}],
    "memory_bound_kernels": [false, true]
  })"));
  ASSERT_EQ(grid.points.size(), 2u);
  EXPECT_TRUE(grid.points[1].config.options.memory_bound_kernels);
  EXPECT_EQ(grid.points[1].columns["memory_bound_kernels"], true);
  const std::vector<double> step =
      column_of(run(grid, temp_path("sweep_kernel_rows"), 1), "step_time_us");
  ASSERT_EQ(step.size(), 2u);
  EXPECT_GT(step[1], step[0]);
  EXPECT_EQ(
      field_of_grid_error(R"({"trace": [{"synthetic": {}}], "memory_bound_kernels": ["yes"]})"),
      "memory_bound_kernels[0]");
  const auto [fresh, row] =
      row_fresh_and_resumed_without("sweep_rows_before_kernels", {"memory_bound_kernels"});
  EXPECT_EQ(fresh["memory_bound_kernels"], false);
  EXPECT_EQ(row["memory_bound_kernels"], false);
}

// The error of resuming `grid`'s fresh results rewritten without `columns`, as an earlier
// version wrote them; the resume must refuse them and leave the file as it was. The fresh rows
// come back in `fresh` where asked.
FileInputError resume_refused_without(const std::string& name, const std::string& grid,
                                      std::initializer_list<const char*> columns,
                                      std::string* fresh = nullptr) {
  const std::string dir = temp_path(name);
  const std::string written =
      read_file(run(load_sweep_grid(write_grid(name + ".json", grid)), dir, 1));
  if (fresh != nullptr) *fresh = written;
  const std::string old_rows = write_rows_as_an_earlier_version_did(dir, written, columns);
  try {
    run_sweep(load_sweep_grid(write_grid(name + ".json", grid)), resume_options(dir));
  } catch (const FileInputError& error) {
    EXPECT_EQ(read_file(dir + "/results.jsonl"), old_rows);
    return error;
  }
  ADD_FAILURE() << "resumed rows written without their columns";
  return FileInputError("", "", "");
}

const char* const kOneSlotGrid = R"({"planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64, "seed": 5}}],
    "nodes": [2], "slots": [1]})";

// Results written before the dense gradients' all-reduce joined the step were priced without
// it: resuming them under a grid that prices it would mix two models under one point key, so
// the resume refuses, naming the parameter, and leaves the file as it was.
TEST(Sweep, ResumeRefusesRowsPricedWithoutTheDenseAllReduce) {
  const FileInputError error =
      resume_refused_without("sweep_rows_before_allreduce", kOneSlotGrid,
                             {"dense_grad_bytes", "dense_grad_reduce_us_per_step"});
  EXPECT_EQ(error.field(), "dense_grad_bytes");
  EXPECT_NE(std::string(error.what()).find("priced with 0"), std::string::npos) << error.what();
}

// Rows written before the attention core was priced at its own efficiency (2026-12-06, with
// the efficiencies' columns) priced its backward at twice its forward: every step time moved,
// so the resume refuses them, naming the column, and leaves the file as it was. A fresh row
// gives the efficiencies the point ran at (the H800's FlashAttention figures at 4,096 tokens).
TEST(Sweep, ResumeRefusesRowsWrittenBeforeTheAttentionCoreHadItsOwnEfficiency) {
  std::string fresh;
  const FileInputError error = resume_refused_without(
      "sweep_rows_before_attention_core", kOneSlotGrid,
      {"attention_forward_efficiency", "attention_backward_efficiency"}, &fresh);
  EXPECT_EQ(error.field(), "attention_backward_efficiency");
  EXPECT_NE(std::string(error.what()).find("another --out"), std::string::npos) << error.what();
  const nlohmann::json row = nlohmann::json::parse(fresh.substr(0, fresh.find('\n')));
  EXPECT_DOUBLE_EQ(row["attention_forward_efficiency"].get<double>(), 0.5852);
  EXPECT_DOUBLE_EQ(row["attention_backward_efficiency"].get<double>(), 0.5478);
}

// Rows written before TopoEP's IB-opened run (2026-12-06) have no column for it: where the
// dispatch is per assignment their TopoEP plans ran without it, so the resume refuses them,
// naming the column; under DeepEP, which does not run it, the rows are what a fresh run writes.
TEST(Sweep, ResumeRefusesPerAssignmentRowsWrittenBeforeTheIbOpenedRun) {
  const char* grid = R"({"planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64, "seed": 5}}],
    "nodes": [2], "slots": [1], "dispatcher": ["alltoall"]})";
  EXPECT_EQ(
      resume_refused_without("sweep_rows_before_ib_opened_run", grid, {"topoep_ib_opened_run"})
          .field(),
      "topoep_ib_opened_run");

  const char* deepep = R"({"planners": ["topoep", "static"],
    "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64, "seed": 5}}],
    "nodes": [2], "slots": [1], "dispatcher": ["deepep"]})";
  const std::string deepep_dir = temp_path("sweep_deepep_rows_before_ib_opened_run");
  const std::string deepep_fresh =
      read_file(run(load_sweep_grid(write_grid("ibrun_deepep.json", deepep)), deepep_dir, 1));
  write_rows_as_an_earlier_version_did(deepep_dir, deepep_fresh, {"topoep_ib_opened_run"});
  const SweepReport report = run_sweep(load_sweep_grid(write_grid("ibrun_deepep.json", deepep)),
                                       resume_options(deepep_dir));
  EXPECT_EQ(report.points_run, 0);
  EXPECT_EQ(read_file(report.jsonl_path), deepep_fresh);
}

TEST(Sweep, ShardArgumentsAreChecked) {
  SweepOptions options;
  parse_shard("2/5", &options);
  EXPECT_EQ(options.shard, 2);
  EXPECT_EQ(options.shards, 5);
  for (const char* bad : {"5/5", "-1/2", "1", "a/b", "1/0", "1/2x"}) {
    EXPECT_THROW(parse_shard(bad, &options), InputError) << bad;
  }
}

}  // namespace
}  // namespace topoep
