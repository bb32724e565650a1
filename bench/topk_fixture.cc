#include "bench/topk_fixture.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "traces/splitmix64.h"

namespace topoep {
namespace bench {

std::int64_t write_topk_npy_layers(const std::string& dir, int layers, std::int64_t tokens,
                                   int top_k, int num_experts) {
  std::filesystem::create_directories(dir);
  SplitMix64 random(3);
  for (int layer = 0; layer < layers; ++layer) {
    // A v1 header padded so that the data starts at a multiple of 64 bytes, as numpy pads it.
    std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (" +
                         std::to_string(tokens) + ", " + std::to_string(top_k) + "), }";
    header.append(128 - 10 - header.size() - 1, ' ');
    header += '\n';
    std::ofstream out(dir + "/layer" + std::to_string(layer) + ".npy", std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const char length[2] = {static_cast<char>(header.size()), 0};
    out.write(length, 2);
    out << header;
    std::vector<std::int32_t> ids(static_cast<std::size_t>(tokens * top_k));
    for (auto& id : ids) id = static_cast<std::int32_t>(random.below(num_experts));
    out.write(reinterpret_cast<const char*>(ids.data()),
              static_cast<std::streamsize>(ids.size() * 4));
  }
  return layers * tokens * top_k * 4;
}

std::int64_t write_topk_csv_layers(const std::string& dir, int layers, std::int64_t tokens,
                                   int top_k, int num_experts) {
  std::filesystem::create_directories(dir);
  SplitMix64 random(3);
  std::int64_t bytes = 0;
  for (int layer = 0; layer < layers; ++layer) {
    std::string text;
    for (std::int64_t token = 0; token < tokens; ++token) {
      for (int k = 0; k < top_k; ++k) {
        text += std::to_string(random.below(num_experts));
        text += k + 1 < top_k ? ',' : '\n';
      }
    }
    std::ofstream(dir + "/layer" + std::to_string(layer) + ".csv", std::ios::binary) << text;
    bytes += static_cast<std::int64_t>(text.size());
  }
  return bytes;
}

}  // namespace bench
}  // namespace topoep
