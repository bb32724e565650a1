// libFuzzer target: the readers of recorded routing data (ESFT text, SGLang statistics, FLAME
// and top-k CSV, top-k .npy, JSON lines, and a top-k CSV import end to end) on a file holding
// the fuzzer's bytes. Each must read it or throw FileInputError / InputError naming it:
// anything else (a crash, another exception, an allocation the file's size does not justify, a
// sanitizer report) is a finding.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/file_input_error.h"
#include "solver/input_error.h"
#include "traces/esft_import.h"
#include "traces/sglang_stats.h"
#include "traces/token_files.h"
#include "traces/trace_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/topoep_fuzz_tokens";
  const std::string path = dir + ".in";
  {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto guarded = [](auto&& read) {
    try {
      read();
    } catch (const topoep::FileInputError&) {
    } catch (const topoep::InputError&) {
    }
  };
  guarded([&] { topoep::read_esft_layer(path, 64, 6); });
  guarded([&] { topoep::read_sglang_logical_count(path); });
  guarded([&] { topoep::read_flame_csv(path, 64, 6); });
  guarded([&] { topoep::read_topk_csv(path, 64, 6); });
  guarded([&] { topoep::read_topk_npy(path, 64, 6); });
  guarded([&] {  // the last layer of a [layers, tokens, top_k] array
    const int layers = topoep::topk_npy_layers(path);
    topoep::read_topk_npy(
        path, 64, 6, [](const topoep::ExpertId*, std::size_t) {}, layers - 1);
  });
  for (const char* format : {"flame-csv", "topk-csv", "topk-npy"}) {
    guarded([&] { topoep::read_token_file_shape(format, path); });
  }
  std::filesystem::remove_all(dir);
  guarded([&] { topoep::import_jsonl(path, 6, 4, dir); });
  std::filesystem::remove_all(dir);
  guarded([&] { topoep::import_jsonl(path, 0, 4, dir); });  // top-k from the lines' own
  // The per-token import end to end (scratch file, packing, writer) on the bytes as one layer's
  // top-k CSV, packed two ways.
  const std::string layers = dir + ".layers";
  std::filesystem::remove_all(layers);
  std::filesystem::create_directories(layers);
  std::filesystem::copy_file(path, layers + "/layer0.csv");
  for (const auto method : {topoep::PackingMethod::kContiguous, topoep::PackingMethod::kRandom}) {
    std::filesystem::remove_all(dir);
    guarded([&] {
      topoep::import_token_files("topk-csv", layers, 64, 6, topoep::ImportShape{2, 1, 1, 1},
                                 topoep::PackingOptions{method, 0, 0, 1}, dir);
    });
  }
  // Top-k taken from the bytes' first row.
  std::filesystem::remove_all(dir);
  guarded([&] {
    topoep::import_token_files("topk-csv", layers, 64, 0, topoep::ImportShape{2, 1, 1, 1},
                               topoep::PackingOptions{}, dir);
  });
  std::filesystem::remove_all(layers);
  return 0;
}
