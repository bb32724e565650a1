// `topoep`: the toolkit's command line. Exit codes in tools/cli/exit_codes.h.

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "common/file_input_error.h"
#include "solver/input_error.h"
#include "tools/cli/calibration_commands.h"
#include "tools/cli/demo_command.h"
#include "tools/cli/eplb_command.h"
#include "tools/cli/exit_codes.h"
#include "tools/cli/model_command.h"
#include "tools/cli/simulate_command.h"
#include "tools/cli/solve_command.h"
#include "tools/cli/sweep_command.h"
#include "tools/cli/topology_command.h"
#include "tools/cli/trace_command.h"
#include "tools/cli/version.h"

int main(int argc, char** argv) {
  CLI::App app("TopoEP: topology-aware load balancing for expert-parallel MoE training", "topoep");
  app.set_version_flag("--version", std::string("topoep ") + topoep::kVersion);
  app.require_subcommand(1);
  topoep::add_calibration_commands(app);
  topoep::add_demo_command(app);
  topoep::add_eplb_command(app);
  topoep::add_simulate_command(app);
  topoep::add_solve_command(app);
  topoep::add_sweep_command(app);
  topoep::add_model_command(app);
  topoep::add_topology_command(app);
  topoep::add_trace_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // --help and --version arrive here too, with exit code 0.
    return app.exit(error) == 0 ? topoep::kExitOk : topoep::kExitBadInput;
  } catch (const topoep::FileInputError& error) {
    std::cerr << "topoep: error: " << error.what() << "\n";
    return topoep::kExitBadInput;
  } catch (const topoep::InputError& error) {
    std::cerr << "topoep: error: " << error.what() << "\n";
    return topoep::kExitBadInput;
  } catch (const std::exception& error) {
    std::cerr << "topoep: error: " << error.what() << "\n";
    return topoep::kExitRuntimeError;
  }
  return topoep::kExitOk;
}
