// `gpu_microbench [--hidden H] [--ffn F] [--counts PATH [--slots S]] --out DIR`: one GPU's
// device solve latency and expert GEMM timings (harness/cuda/gpu_microbench.h). Built only with
// --config=cuda.

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>

#include "harness/cuda/gpu_microbench.h"
#include "models/model_json.h"
#include "sim/own_routing.h"
#include "sim/solver_cost.h"
#include "topologies/topology_presets.h"

int main(int argc, char** argv) {
  CLI::App app("TopoEP GPU microbenchmarks: device solve latency, expert GEMM efficiency");
  int hidden = 7168, ffn = 2048, slots = 1;
  std::string out, topology = "h800-4x8", model = "deepseek-v3", counts;
  app.add_option("--topology", topology, "The solver's cost parameters: topology")
      ->capture_default_str();
  app.add_option("--model", model, "... and model")->capture_default_str();
  app.add_option("--hidden", hidden, "Model hidden size (DeepSeek-V3: 7168)")
      ->capture_default_str();
  app.add_option("--ffn", ffn, "Expert FFN size (DeepSeek-V3: 2048)")->capture_default_str();
  app.add_option("--counts", counts,
                 "Also time your own routing: a `topoep solve --counts` file or a trace "
                 "directory (its first 64 records), planned on --topology for --model");
  app.add_option("--slots", slots, "Spare slots per GPU for --counts")->capture_default_str();
  app.add_option("--out", out, "Output directory")->required();
  CLI11_PARSE(app, argc, argv);
  std::unique_ptr<topoep::OwnRouting> own;
  topoep::CostParams cost;
  try {
    const topoep::Topology cluster = topoep::load_topology(topology);
    const topoep::ModelSpec spec = topoep::load_model(model);
    cost = topoep::derive_solver_cost(cluster, spec, 4096, true).params;
    // Your routing is read and checked before the GPU is touched.
    if (!counts.empty()) {
      own = std::make_unique<topoep::OwnRouting>();
      own->layers = topoep::read_routing_layers(counts);
      own->problem = topoep::problem_for_routing(own->layers, cluster, spec, slots,
                                                 {counts, "--topology", "--model", "--slots"});
    }
  } catch (const std::exception& error) {
    std::cerr << "gpu_microbench: " << error.what() << "\n";
    return 2;
  }
  try {
    std::filesystem::create_directories(out);
    topoep::run_gpu_microbench(cost, hidden, ffn, out, own.get());
    std::cout << "wrote " << out << "/solve_latency.csv, gemm_samples.csv and hbm_samples.csv"
              << (own ? " and own_routing_solve.csv" : "") << "\n";
  } catch (const std::exception& error) {
    std::cerr << "gpu_microbench: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
