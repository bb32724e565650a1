// libFuzzer target: a trace whose index.json or chunk file is the fuzzer's bytes (the first
// byte picks which). The reader must either read it or throw FileInputError / InputError:
// anything else (a crash, another exception, a sanitizer report) is a finding.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/file_input_error.h"
#include "solver/input_error.h"
#include "traces/trace_reader.h"
#include "traces/trace_writer.h"

namespace {

const std::string& good_trace() {
  static const std::string path = [] {
    const std::string dir =
        std::filesystem::temp_directory_path().string() + "/topoep_fuzz_good.trace";
    std::filesystem::remove_all(dir);
    topoep::TraceMetadata m;
    m.model = "fuzz";
    m.num_experts = 4;
    m.top_k = 2;
    m.num_ranks = 2;
    m.gpus_per_node = 1;
    m.num_layers = 1;
    m.microbatches = 1;
    m.steps = 2;
    m.tokens_per_rank = 3;
    m.source = "fuzz";
    m.records_per_chunk = 1;
    topoep::TraceWriter writer(dir, m);
    writer.add(topoep::RoutingCounts(2, 4, {1, 2, 3, 0, 0, 0, 3, 3}));
    writer.add(topoep::RoutingCounts(2, 4, {6, 0, 0, 0, 0, 6, 0, 0}));
    writer.finish();
    return dir;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string dir =
      std::filesystem::temp_directory_path().string() + "/topoep_fuzz_case.trace";
  std::filesystem::remove_all(dir);
  std::filesystem::copy(good_trace(), dir);
  const char* target = data[0] % 2 == 0 ? "/index.json" : "/chunk-000000.safetensors";
  std::ofstream(dir + target, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  try {
    topoep::validate_trace(dir);
  } catch (const topoep::FileInputError&) {
  } catch (const topoep::InputError&) {
  }
  return 0;
}
