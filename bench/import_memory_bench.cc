// Memory and speed of `topoep trace import --format jsonl` (traces/jsonl_import.cc) on a
// recorder's lines: the most heap the import holds at once (bench/heap_peak.h) and the input
// it reads per second, for recordings of growing length, in record order and shuffled. A long
// training run's recording outgrows memory, so the peak should follow the trace writer's chunk
// (about 16 MiB) and the 32 bytes a line of the line index, not the input.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bench/heap_peak.h"
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

// Args: steps, shuffled (0 or 1).
void BM_ImportJsonlPeakHeap(benchmark::State& state) {
  const int steps = static_cast<int>(state.range(0));
  const TempPath dir("topoep-import-memory");
  std::filesystem::create_directories(dir.path());
  const std::string input = dir.path() + "/recording.jsonl";
  const std::int64_t bytes = write_recording(input, steps, state.range(1) != 0);
  const std::int64_t baseline = bench::live_heap_bytes();
  std::int64_t peak = 0, records = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::filesystem::remove_all(dir.path() + "/out.trace");
    bench::reset_heap_peak();
    state.ResumeTiming();
    records = import_jsonl(input, 8, 8, dir.path() + "/out.trace");
    peak = std::max(peak, bench::peak_heap_bytes() - baseline);
  }
  const double mib = 1 << 20;
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["records"] = static_cast<double>(records);
  state.counters["input_MiB"] = static_cast<double>(bytes) / mib;
  state.counters["peak_heap_MiB"] = static_cast<double>(peak) / mib;
}
BENCHMARK(BM_ImportJsonlPeakHeap)
    ->Args({4, 0})
    ->Args({16, 0})
    ->Args({64, 0})
    ->Args({64, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace topoep

BENCHMARK_MAIN();
