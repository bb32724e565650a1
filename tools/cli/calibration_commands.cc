#include "tools/cli/calibration_commands.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "harness/calibration.h"
#include "tools/cli/table.h"
#include "tools/cli/topology_flags.h"
#include "topologies/topology_json.h"
#include "topologies/topology_presets.h"

namespace topoep {
namespace {

struct CalibrateOptions {
  std::string measurements;
  TopologyFlags cluster{"h800-4x8"};
  std::string out;
};

void run_calibrate(const CalibrateOptions& options) {
  const Topology base = load_topology_flags(options.cluster, 0);
  const Topology fitted = calibrate_topology(base, options.measurements);
  AtomicFile file(options.out);
  file.write(topology_to_json(fitted).dump(2) + "\n");
  file.commit();
  TextTable table({"link", "latency us (before)", "fitted", "bandwidth GB/s (before)", "fitted"});
  for (const auto& [name, before, after] :
       {std::make_tuple("NVLink", &base.scale_up, &fitted.scale_up),
        std::make_tuple("IB", &base.scale_out, &fitted.scale_out)}) {
    table.add_row({name, format_fixed(before->latency_us, 3), format_fixed(after->latency_us, 3),
                   format_fixed(before->bandwidth_gb_per_s, 3),
                   format_fixed(after->bandwidth_gb_per_s, 3)});
  }
  table.print(std::cout);
  std::cout << "GEMM efficiency curve: " << fitted.gemm_efficiency.tokens_per_expert.size()
            << " points\nWrote " << options.out << "\n";
}

// A simulate --out directory's summary.json run.sim_options, or an empty object where it has
// none (or there is no summary).
nlohmann::json simulated_options(const std::string& sim_dir) {
  std::ifstream in(sim_dir + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
  const nlohmann::json::json_pointer field("/run/sim_options");
  if (summary.is_discarded() || !summary.contains(field) || !summary[field].is_object()) {
    return nlohmann::json::object();
  }
  return summary[field];
}

void run_compare(const std::string& sim_dir, const std::string& measured_dir) {
  const PerLayerComparison comparison =
      compare_per_layer(sim_dir + "/per_layer.csv", measured_dir + "/per_layer.csv");
  TextTable table(
      {"phase", "records", "mean error %", "worst error %", "worst at (step,mb,layer,planner)"});
  for (const PhaseError& e : comparison.phases) {
    table.add_row(
        {e.phase, std::to_string(e.rows), e.rows ? format_fixed(100 * e.mean_relative, 1) : "-",
         e.rows ? format_fixed(100 * e.worst_relative, 1) : "-", e.rows ? e.worst_at : "-"});
  }
  std::cout << "Simulator (" << sim_dir << ") against measurements (" << measured_dir
            << "): |simulated - measured| / measured\n\n";
  const nlohmann::json options = simulated_options(sim_dir);
  if (options.contains("dispatcher") && options["dispatcher"] == "deepep") {
    // The harness's all-to-all sends one copy per token-expert assignment.
    std::cout << "Note: the simulation priced DeepEP's dispatch (--dispatcher deepep); the "
                 "harness sends every token-expert assignment on its own, so the dispatch and "
                 "combine phases compare unlike with like: simulate with --dispatcher alltoall "
                 "to calibrate.\n\n";
  }
  const auto overlap = options.find("a2a_overlap_fraction");
  if (overlap != options.end() && overlap->is_number() && overlap->get<double>() > 0) {
    // The harness runs one microbatch's forward at a time.
    std::cout << "Note: the simulation ran part of the all-to-alls behind another microbatch's "
                 "compute (--a2a-overlap); the harness runs each on the critical path, so the "
                 "MoE forward compares unlike with like: simulate with --a2a-overlap 0 to "
                 "calibrate.\n\n";
  }
  table.print(std::cout);
  if (comparison.same_plans >= 0) {
    std::cout << "\nSame plan in both: " << comparison.same_plans << " of " << comparison.records
              << " records"
              << (comparison.same_plans < comparison.records
                      ? " (the others differ where the simulator ran TopoEP's static fallback, or "
                        "where the runs used other planner options)"
                      : "")
              << "\n";
  }
}

}  // namespace

void add_calibration_commands(CLI::App& app) {
  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "Fit link latency/bandwidth and the GEMM curve from harness measurements");
  auto c = std::make_shared<CalibrateOptions>();
  calibrate
      ->add_option("--measurements", c->measurements,
                   "Directory with link_samples.csv and gemm_samples.csv (topoep-harness "
                   "microbench)")
      ->required();
  calibrate->add_option("--topology", c->cluster.topology, "The topology to start from")
      ->capture_default_str();
  add_reshape_flags(calibrate, c->cluster);  // as the harness measured it
  calibrate->add_option("--out", c->out, "Calibrated topology file to write")->required();
  calibrate->callback([c] { run_calibrate(*c); });

  CLI::App* compare = app.add_subcommand(
      "compare", "Per-phase error of the simulator against harness measurements");
  auto sim = std::make_shared<std::string>(), measured = std::make_shared<std::string>();
  compare->add_option("--sim", *sim, "A simulate --out directory")->required();
  compare->add_option("--measured", *measured, "A topoep-harness run --out directory")->required();
  compare->callback([sim, measured] { run_compare(*sim, *measured); });
}

}  // namespace topoep
