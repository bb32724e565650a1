// `topoep-harness`: the real multi-rank validation harness, one MPI rank per GPU.
//   mpirun -np R topoep-harness run --trace DIR --topology P --model P --out DIR
//   mpirun -np R topoep-harness microbench --topology P --out DIR
// Host mode (this build): MPI_Alltoallv over host buffers and Eigen FFNs at scaled-down
// dimensions. Exit codes: 0 ok, 1 runtime error, 2 bad input, 3 a check failed (plan hashes
// or outputs differ).

#include <mpi.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "common/file_input_error.h"
#include "common/flag_errors.h"
#include "common/preset_source.h"
#include "common/text_list.h"
#include "harness/harness_run.h"
#include "harness/microbench.h"
#include "harness/moe_layer.h"
#include "harness/mpi_comm.h"
#include "models/model_json.h"
#include "sim/home_layout_check.h"
#include "solver/input_error.h"
#include "topologies/topology_presets.h"
#include "topologies/topology_shape.h"

#if defined(TOPOEP_WITH_CUDA)
#include "harness/cuda/cuda_layer.h"
#include "harness/cuda/device_planner.h"
#endif

namespace {

int report(int rank, const std::string& message, int code) {
  // Every rank knows; rank 0 speaks for all, others only for errors rank 0 may not share (a
  // file missing on one host). One write per line, so that ranks' lines do not interleave.
  if (rank == 0 || code != 3) {
    std::cerr << "topoep-harness: rank " + std::to_string(rank) + ": " + message + "\n";
  }
  return code;
}

// --hidden and --ffn, at least 1: with no hidden or FFN dimension every output is empty, and
// "outputs equal the static plan's" would be checked of nothing. At most 65,536: the executed
// layer is a scaled-down stand-in, and a larger one exhausts host memory.
void add_dims(CLI::App* command, topoep::MoeDims& dims, const std::string& what) {
  command->add_option("--hidden", dims.hidden, what + " hidden size")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  command->add_option("--ffn", dims.ffn, what + " expert FFN size")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
}

int run(int argc, char** argv, topoep::MpiComm& comm) {
  CLI::App app("TopoEP validation harness (host mode: MPI + Eigen)", "topoep-harness");
  app.require_subcommand(1);
  topoep::HarnessConfig config;
  std::string topology = "h800-4x8", model = "deepseek-v3", out, mode = "host";
  int nodes = 0, gpus_per_node = 0;  // 0: the topology's own
  // --nodes and --gpus-per-node reshape --topology to the ranks mpirun starts
  // (topologies/topology_shape.h).
  const auto add_shape = [&](CLI::App* command) {
    command->add_option("--nodes", nodes, "Run the topology on this many nodes")
        ->check(CLI::Range(1, topoep::kMaxTopologyGpus));
    command->add_option("--gpus-per-node", gpus_per_node, "Give its nodes this many GPUs")
        ->check(CLI::Range(1, topoep::kMaxTopologyGpus));
  };
  CLI::App* replay = app.add_subcommand("run", "Execute every record's plan and check it");
  replay->add_option("--trace", config.trace, "Trace directory")->required();
  replay->add_option("--topology", topology, "Preset or file; GPUs = MPI ranks")
      ->capture_default_str();
  add_shape(replay);
  replay->add_option("--model", model, "Preset or file (the planner's costs)")
      ->capture_default_str();
  replay->add_option("--mode", mode, "host (MPI + Eigen) or cuda (NCCL + cuBLAS)")
      ->capture_default_str()
      ->check(CLI::IsMember({"host", "cuda"}));
  replay->add_option("--planner", config.planner, "Any topoep solve planner")
      ->capture_default_str();
  replay->add_option("--slots", config.slots_per_rank, "Spare slots per GPU")
      ->capture_default_str();
  bool uneven_homes = false;
  replay->add_flag("--uneven-homes", uneven_homes, topoep::kUnevenHomesHelp);
  add_dims(replay, config.dims, "Executed");
  replay->add_option("--records", config.max_records, "Stop after N records (0: all)")
      ->check(CLI::Range(0, 1 << 30));
  replay->add_option("--perturb-rank", config.perturb_rank,
                     "This rank corrupts its counts: the hash check must catch it");
  replay->add_option("--tolerance", config.tolerance, "Max relative output difference")
      ->capture_default_str();  // checked below: CLI::Range lets NaN through
  replay->add_option("--out", config.out_dir, "Write per_layer.csv and per_rank.csv here");
  CLI::App* micro = app.add_subcommand("microbench", "Link and GEMM timings for topoep calibrate");
  micro->add_option("--topology", topology, "Preset or file; GPUs = MPI ranks")
      ->capture_default_str();
  add_shape(micro);
  add_dims(micro, config.dims, "GEMM");
  micro->add_option("--out", out, "Write link_samples.csv and gemm_samples.csv here")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return comm.rank() == 0 ? (app.exit(error) == 0 ? 0 : 2) : (error.get_exit_code() == 0 ? 0 : 2);
  }
  try {
    const topoep::Topology base = topoep::load_topology(topology);
    topoep::naming_flags({{"nodes", "--nodes"}, {"gpus_per_node", "--gpus-per-node"}},
                         [&] { config.topology = topoep::reshaped(base, nodes, gpus_per_node); });
    if (config.topology.num_gpus() != comm.size()) {
      const std::string reshape = topoep::fitting_nodes_hint(config.topology, comm.size(), false);
      throw topoep::InputError(
          "--topology",
          topoep::quoted_with_origin(config.topology.name, config.topology.origin) + " has " +
              std::to_string(config.topology.num_gpus()) + " GPUs but mpirun started " +
              std::to_string(comm.size()) + " ranks" +
              (!reshape.empty()
                   ? reshape
                   : topoep::preset_hint(topoep::topology_presets_with_gpus(comm.size()),
                                         std::to_string(comm.size()) + " GPUs",
                                         topoep::show_command("topology", config.topology.name,
                                                              config.topology.origin))));
    }
    if (replay->parsed()) {
      if (!(config.tolerance >= 0 && config.tolerance <= 1)) {
        throw topoep::InputError(
            "--tolerance", "must be in [0, 1] (got " + std::to_string(config.tolerance) + ")");
      }
      // -1 (the default) perturbs nothing; a rank that does not exist would do the same, and the
      // check that the run exists to make would silently not happen.
      if (config.perturb_rank < -1 || config.perturb_rank >= comm.size()) {
        throw topoep::InputError("--perturb-rank", "must be a rank, 0 to " +
                                                       std::to_string(comm.size() - 1) + " (got " +
                                                       std::to_string(config.perturb_rank) + ")");
      }
      config.model = topoep::load_model(model);
      config.homes = uneven_homes ? topoep::HomeLayout::kUneven : topoep::HomeLayout::kEven;
      const topoep::TopologyView view = config.topology.view();
      topoep::LayerFactory make_layer = [&] {
        return std::make_unique<topoep::MoeLayer>(comm, view, config.dims);
      };
      topoep::PlannerFactory make_planner = [&](const topoep::PlannerContext& context) {
        return topoep::make_planner(config.planner, context, topoep::PlannerOptions{});
      };
      if (mode == "cuda") {
#if defined(TOPOEP_WITH_CUDA)
        const auto context = topoep::make_cuda_context(comm);
        make_layer = [&, context] {
          return topoep::make_cuda_layer(context, comm, view, config.dims);
        };
        if (config.planner == "topoep") {  // the TopoEP solve on the device
          make_planner = [](const topoep::PlannerContext& planner_context) {
            return std::unique_ptr<topoep::Planner>(
                topoep::make_device_topoep_planner(planner_context));
          };
        }
#else
        throw topoep::InputError("--mode",
                                 "this build has no cuda mode (build with --config=cuda)");
#endif
      }
      const std::int64_t records = topoep::run_harness(config, comm, make_layer, make_planner);
      if (comm.rank() == 0) {
        std::cout << "ran " << records << " records on " << comm.size()
                  << " ranks: plan hashes identical, outputs equal the static plan's"
                  << (config.out_dir.empty() ? "" : "; wrote " + config.out_dir + "/per_layer.csv")
                  << "\n";
      }
    } else {
      topoep::run_microbench(comm, config.topology.view(), config.dims, out);
      if (comm.rank() == 0) std::cout << "wrote " << out << "/link_samples.csv, gemm_samples.csv\n";
    }
  } catch (const topoep::HarnessCheckError& error) {
    return report(comm.rank(), error.what(), 3);
  } catch (const topoep::FileInputError& error) {
    return report(comm.rank(), error.what(), 2);
  } catch (const topoep::InputError& error) {
    return report(comm.rank(), error.what(), 2);
  } catch (const std::exception& error) {
    return report(comm.rank(), error.what(), 1);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  {
    topoep::MpiComm comm;
    code = run(argc, argv, comm);
  }
  MPI_Finalize();
  return code;
}
