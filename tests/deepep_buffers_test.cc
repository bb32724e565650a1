// DeepEP's fixed buffers: its size hints worked for DeepSeek-V3's hidden size, and the group
// sizes it has no recommended config for.

#include "sim/deepep_buffers.h"

#include <gtest/gtest.h>

namespace topoep {
namespace {

constexpr int kHidden = 7168;  // DeepSeek-V3; Megatron-LM sizes the buffers at 2 bytes an element

// Per token of a channel's receive buffer: 14,336 hidden bytes, 8 of source metadata, 128
// top-k indices (int64) and weights (float) and 128 fp8 scales (float): 16,392 bytes.
constexpr Bytes kPerToken = 14336 + 8 + 128 * 8 + 128 * 4 + 128 * 4;

TEST(DeepepBuffers, OneNodeKeepsItsNvlinkBufferOnly) {
  // 10 channels (20 SMs) x 8 peers x 256 tokens, plus the channels' counters.
  const Bytes nvl = 10 * 8 * (2 * 1 + 3) * 4 + 10 * 8 * 256 * kPerToken;
  EXPECT_EQ(deepep_buffer_bytes(8, kHidden), (nvl + 127) / 128 * 128);
}

TEST(DeepepBuffers, NodesAddTheRdmaBufferAtTheLargerOfDispatchAndCombine) {
  // 32 GPUs: 4 RDMA ranks; NVLink chunks of 288 tokens; RDMA receive chunks of 128 rounded up
  // to the send chunk: 128 for the dispatch's 32, 140 for the combine's 20 (the larger).
  const Bytes nvl = 10 * 8 * (2 * 4 + 3) * 4 + 10 * 8 * 288 * kPerToken;
  const Bytes rdma = 10 * 4 * (8 * 2 + 2) * 2 * 4 + 10 * 4 * 140 * (kPerToken + 16) * 2 + (1 << 20);
  const auto rounded = [](Bytes bytes) { return (bytes + 127) / 128 * 128; };
  EXPECT_EQ(deepep_buffer_bytes(32, kHidden), rounded(nvl) + rounded(rdma));
  EXPECT_EQ(deepep_buffer_bytes(32, kHidden), 562499200);
  // 64 GPUs: 8 RDMA ranks, twice the RDMA buffer; more SMs, more channels.
  EXPECT_EQ(deepep_buffer_bytes(64, kHidden), 746277120);
  EXPECT_GT(deepep_buffer_bytes(64, kHidden, 24), deepep_buffer_bytes(64, kHidden));
}

TEST(DeepepBuffers, AGroupWithoutARecommendedConfigCountsNone) {
  EXPECT_FALSE(deepep_buffer_bytes(48, kHidden).has_value());
  EXPECT_FALSE(deepep_buffer_bytes(72, kHidden).has_value());
  EXPECT_TRUE(deepep_buffer_bytes(144, kHidden).has_value());
}

}  // namespace
}  // namespace topoep
