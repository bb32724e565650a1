#include "sim/deepep_buffers.h"

#include <algorithm>
#include <array>

namespace topoep {
namespace {

// A recommended config's chunk sizes, in tokens (DeepEP's Config, less its SM count).
struct ChunkConfig {
  int nvl_recv;   // num_max_nvl_chunked_recv_tokens
  int rdma_send;  // num_max_rdma_chunked_send_tokens
  int rdma_recv;  // num_max_rdma_chunked_recv_tokens, before Config rounds it up
};

struct RecommendedConfigs {
  int num_ranks;
  ChunkConfig dispatch, combine;
};

// deep_ep/buffer.py's get_dispatch_config() and get_combine_config() (the NVLink send chunk,
// which sizes no buffer, left out).
constexpr std::array<RecommendedConfigs, 10> kRecommended = {{
    {2, {256, 6, 128}, {256, 6, 128}},
    {4, {256, 6, 128}, {256, 6, 128}},
    {8, {256, 6, 128}, {256, 6, 128}},
    {16, {288, 20, 128}, {288, 28, 128}},
    {24, {288, 32, 128}, {288, 20, 128}},
    {32, {288, 32, 128}, {288, 20, 128}},
    {64, {288, 28, 128}, {288, 20, 128}},
    {128, {560, 32, 128}, {560, 12, 128}},
    {144, {720, 12, 128}, {720, 8, 128}},
    {160, {720, 12, 128}, {720, 8, 128}},
}};

constexpr Bytes kNvlPeers = 8;     // NUM_MAX_NVL_PEERS
constexpr Bytes kMaxTopK = 128;    // the hints' kNumMaxTopK
constexpr Bytes kMaxScales = 128;  // and kNumMaxScales
constexpr Bytes kSourceMeta = 8;   // internode::SourceMeta: two ints
constexpr Bytes kInt4 = 16;

Bytes round_up(Bytes bytes, Bytes to) { return (bytes + to - 1) / to * to; }

// Per token in a channel's receive buffer: its hidden bytes, source metadata, top-k indices
// (int64) and weights (float), and fp8 scales (float).
Bytes per_token(Bytes hidden_bytes) {
  return hidden_bytes + kSourceMeta + kMaxTopK * 8 + kMaxTopK * 4 + kMaxScales * 4;
}

// Config::get_nvl_buffer_size_hint().
Bytes nvl_hint(const ChunkConfig& config, Bytes hidden_bytes, Bytes ranks, Bytes channels) {
  const Bytes rdma_ranks = std::max<Bytes>(ranks / kNvlPeers, 1);
  const Bytes nvl_ranks = std::min(ranks, kNvlPeers);
  const Bytes bytes = channels * nvl_ranks * (2 * rdma_ranks + 3) * 4 +
                      channels * nvl_ranks * config.nvl_recv * per_token(hidden_bytes);
  return round_up(bytes, 128);
}

// Config::get_rdma_buffer_size_hint(): none within one NVLink group; the receive chunk rounded
// up to a multiple of the send chunk, as Config's constructor does; send and receive halves.
Bytes rdma_hint(const ChunkConfig& config, Bytes hidden_bytes, Bytes ranks, Bytes channels) {
  if (ranks <= kNvlPeers) return 0;
  const Bytes rdma_ranks = ranks / kNvlPeers;
  const Bytes recv = round_up(config.rdma_recv, config.rdma_send);
  const Bytes bytes = channels * rdma_ranks * (kNvlPeers * 2 + 2) * 2 * 4 +
                      channels * rdma_ranks * recv * (per_token(hidden_bytes) + kInt4) * 2 +
                      (Bytes{1} << 20);  // "a large number to be safe"
  return round_up(bytes, 128);
}

}  // namespace

std::optional<Bytes> deepep_buffer_bytes(int num_ranks, int hidden_size, int num_sms) {
  const auto found =
      std::find_if(kRecommended.begin(), kRecommended.end(),
                   [&](const RecommendedConfigs& c) { return c.num_ranks == num_ranks; });
  if (found == kRecommended.end()) return std::nullopt;
  // Megatron-LM's get_hidden_bytes(): at least 2 bytes an element, whatever is sent.
  const Bytes hidden_bytes = static_cast<Bytes>(hidden_size) * 2;
  const Bytes ranks = num_ranks, channels = num_sms / 2;
  const Bytes nvl = std::max(nvl_hint(found->dispatch, hidden_bytes, ranks, channels),
                             nvl_hint(found->combine, hidden_bytes, ranks, channels));
  const Bytes rdma = std::max(rdma_hint(found->dispatch, hidden_bytes, ranks, channels),
                              rdma_hint(found->combine, hidden_bytes, ranks, channels));
  return nvl + rdma;
}

}  // namespace topoep
