// libFuzzer target: the JSON loaders (topology, model, solve counts, trace metadata, sweep
// grid) on the fuzzer's bytes. Each must accept the input or throw FileInputError / InputError
// naming it.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/file_input_error.h"
#include "models/model_json.h"
#include "sim/sweep_grid.h"
#include "solver/input_error.h"
#include "topologies/topology_json.h"
#include "traces/counts_json.h"
#include "traces/trace_format.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = std::filesystem::temp_directory_path().string() + "/topoep_fuzz.json";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  auto guarded = [](auto&& load) {
    try {
      load();
    } catch (const topoep::FileInputError&) {
    } catch (const topoep::InputError&) {
    }
  };
  guarded([&] { topoep::parse_topology(text, "fuzz"); });
  guarded([&] { topoep::parse_model(text, "fuzz"); });
  guarded([&] { topoep::read_counts_json(path); });
  guarded([&] { topoep::load_sweep_grid(path); });
  guarded([&] {
    const nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
    if (!value.is_discarded()) topoep::trace_metadata_from_json(value, "fuzz");
  });
  return 0;
}
