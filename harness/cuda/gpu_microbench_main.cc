// `gpu_microbench [--hidden H] [--ffn F] --out DIR`: one GPU's device solve latency and expert
// GEMM timings (harness/cuda/gpu_microbench.h). Built only with --config=cuda.

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "harness/cuda/gpu_microbench.h"
#include "models/model_json.h"
#include "sim/solver_cost.h"
#include "topologies/topology_presets.h"

int main(int argc, char** argv) {
  CLI::App app("TopoEP GPU microbenchmarks: device solve latency, expert GEMM efficiency");
  int hidden = 7168, ffn = 2048;
  std::string out, topology = "h800-4x8", model = "deepseek-v3";
  app.add_option("--topology", topology, "The solver's cost parameters: topology")
      ->capture_default_str();
  app.add_option("--model", model, "... and model")->capture_default_str();
  app.add_option("--hidden", hidden, "Model hidden size (DeepSeek-V3: 7168)")
      ->capture_default_str();
  app.add_option("--ffn", ffn, "Expert FFN size (DeepSeek-V3: 2048)")->capture_default_str();
  app.add_option("--out", out, "Output directory")->required();
  CLI11_PARSE(app, argc, argv);
  try {
    std::filesystem::create_directories(out);
    const topoep::CostParams cost =
        topoep::derive_solver_cost(topoep::load_topology(topology), topoep::load_model(model), 4096,
                                   true)
            .params;
    topoep::run_gpu_microbench(cost, hidden, ffn, out);
    std::cout << "wrote " << out << "/solve_latency.csv and gemm_samples.csv\n";
  } catch (const std::exception& error) {
    std::cerr << "gpu_microbench: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
