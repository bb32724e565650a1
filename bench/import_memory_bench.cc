// Memory and speed of `topoep trace import`: the most heap an import holds at once
// (bench/heap_peak.h) and the input it reads per second, for inputs of growing length.
// - `--format jsonl` (traces/jsonl_import.cc) on a recorder's lines, in record order and
//   shuffled. A long training run's recording outgrows memory, so the peak should follow the
//   trace writer's chunk (about 16 MiB), not the input.
// - `--format topk-npy` (per-token ids, traces/int32_spill.h): the peak should follow the chunk and
//   the packing's unit order (4 bytes a unit: a token here), not the ids.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/heap_peak.h"
#include "bench/topk_fixture.h"
#include "common/temp_path.h"
#include "traces/splitmix64.h"
#include "traces/trace_import.h"

namespace topoep {
namespace {

// DeepSeek-V3's experts on the paper's 32 GPUs: 8 MoE layers, 2 microbatches a step.
constexpr int kRanks = 32, kExperts = 256, kLayers = 8, kMicrobatches = 2;

// A recording of `steps` steps, one line per (step, microbatch, layer, rank) with seeded counts
// (about 1 KB a line), in record order or shuffled; returns its size in bytes.
std::int64_t write_recording(const std::string& path, int steps, bool shuffled) {
  SplitMix64 random(11);
  std::vector<std::string> lines;
  for (int s = 0; s < steps; ++s)
    for (int mb = 0; mb < kMicrobatches; ++mb)
      for (int l = 0; l < kLayers; ++l)
        for (int r = 0; r < kRanks; ++r) {
          std::string line = "{\"step\": " + std::to_string(s) +
                             ", \"microbatch\": " + std::to_string(mb) +
                             ", \"layer\": " + std::to_string(l) +
                             ", \"rank\": " + std::to_string(r) + ", \"counts\": [";
          for (int e = 0; e < kExperts; ++e) {
            line += (e ? ", " : "") + std::to_string(random.below(64));
          }
          lines.push_back(line + "]}\n");
        }
  if (shuffled) {
    for (std::size_t i = lines.size(); i > 1; --i) {
      std::swap(lines[i - 1], lines[random.below(i)]);
    }
  }
  std::ofstream out(path, std::ios::binary);
  std::int64_t bytes = 0;
  for (const std::string& line : lines) {
    out << line;
    bytes += static_cast<std::int64_t>(line.size());
  }
  return bytes;
}

// Times `import(out)` (which returns the records it wrote) into `out`, removed before each
// run, and reports the most heap any run held above what was live before the first, with the
// input's `bytes` read per second.
template <typename Import>
void time_import(benchmark::State& state, const std::string& out, std::int64_t bytes,
                 Import import) {
  const std::int64_t baseline = bench::live_heap_bytes();
  std::int64_t peak = 0, records = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::filesystem::remove_all(out);
    bench::reset_heap_peak();
    state.ResumeTiming();
    records = import(out);
    peak = std::max(peak, bench::peak_heap_bytes() - baseline);
  }
  const double mib = 1 << 20;
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["records"] = static_cast<double>(records);
  state.counters["input_MiB"] = static_cast<double>(bytes) / mib;
  state.counters["peak_heap_MiB"] = static_cast<double>(peak) / mib;
}

// Args: steps, shuffled (0 or 1).
void BM_ImportJsonlPeakHeap(benchmark::State& state) {
  const TempPath dir("topoep-import-memory");
  std::filesystem::create_directories(dir.path());
  const std::string input = dir.path() + "/recording.jsonl";
  const std::int64_t bytes =
      write_recording(input, static_cast<int>(state.range(0)), state.range(1) != 0);
  time_import(state, dir.path() + "/out.trace", bytes,
              [&](const std::string& out) { return import_jsonl(input, 8, 8, out); });
}
BENCHMARK(BM_ImportJsonlPeakHeap)
    ->Args({4, 0})
    ->Args({16, 0})
    ->Args({64, 0})
    ->Args({64, 1})
    ->Unit(benchmark::kMillisecond);

// Args: tokens per layer (8 layers of top-8 int32 ids), packing (0 contiguous, 1 random);
// packed onto 64 ranks x 1,024 tokens (a microbatch every 65,536 tokens).
void BM_ImportTopkNpyPeakHeap(benchmark::State& state) {
  const TempPath dir("topoep-import-memory-npy");
  const std::string input = dir.path() + "/in";
  const std::int64_t bytes = bench::write_topk_npy_layers(input, 8, state.range(0), 8, kExperts);
  PackingOptions packing;
  packing.method = state.range(1) != 0 ? PackingMethod::kRandom : PackingMethod::kContiguous;
  time_import(state, dir.path() + "/out.trace", bytes, [&](const std::string& out) {
    return import_token_files("topk-npy", input, kExperts, 8, ImportShape{64, 8, 1024, 1}, packing,
                              out);
  });
}
BENCHMARK(BM_ImportTopkNpyPeakHeap)
    ->Args({65536, 0})
    ->Args({262144, 0})
    ->Args({1048576, 0})
    ->Args({1048576, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace topoep

BENCHMARK_MAIN();
