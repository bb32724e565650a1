#pragma once
// The canonical byte encoding of a plan and its 64-bit hash.
//
// Encoding, all integers little-endian whatever the host:
//   offset 0   8 bytes  magic "TOPOEPPL"
//   offset 8   u32      format version (1)
//   offset 12  u32      num_ranks;  16: u32 num_experts;  20: u32 slots_per_rank
//   offset 24  i32 x (num_ranks * slots_per_rank)   replica_expert, rank-major, -1 = empty
//   then       u64      number of routes
//   then       per route: i32 src, i32 expert, i32 dst, i64 tokens (20 bytes, canonical order)
//
// Hash (plan hash v1), over the L encoded bytes read as 64-bit little-endian words w_i,
// i = 0 .. ceil(L / 8) - 1, the last one zero-padded:
//   fmix64(x)  = MurmurHash3's 64-bit finalizer (shifts 33, multipliers 0xff51afd7ed558ccd,
//                0xc4ceb9fe1a85ec53)
//   key(i)     = fmix64(i + 0x9e3779b97f4a7c15)
//   sum        = SUM over i of fmix64(w_i XOR key(i))   (mod 2^64)
//   hash       = fmix64(sum XOR fmix64(L))
// Every word's contribution depends on its position, so reordering changes the hash; and
// integer addition mod 2^64 gives the same sum in any order, so serial, multi-threaded and GPU
// reductions agree bit for bit. It depends only on the bytes: the same for every compiler,
// platform, thread count and backend. It detects differences; it is not cryptographic.

#include <cstdint>
#include <string>
#include <vector>

#include "solver/host_device.h"
#include "solver/plan.h"

namespace topoep {

constexpr std::uint32_t kPlanEncodingVersion = 1;
constexpr std::int64_t kPlanHeaderBytes = 24;
constexpr std::int64_t kRouteBytes = 20;

TOPOEP_HOST_DEVICE inline std::uint64_t fmix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// key(i): depends on the word's position alone, so a host can tabulate it once.
TOPOEP_HOST_DEVICE inline std::uint64_t hash_word_key(std::int64_t index) {
  return fmix64(static_cast<std::uint64_t>(index) + 0x9e3779b97f4a7c15ull);
}

// The contribution of an encoded word to the hash sum, given its key.
TOPOEP_HOST_DEVICE inline std::uint64_t hash_word_term_keyed(std::uint64_t word,
                                                             std::uint64_t key) {
  return fmix64(word ^ key);
}

// The contribution of encoded word `index` to the hash sum.
TOPOEP_HOST_DEVICE inline std::uint64_t hash_word_term(std::uint64_t word, std::int64_t index) {
  return hash_word_term_keyed(word, hash_word_key(index));
}

TOPOEP_HOST_DEVICE inline std::uint64_t hash_finish(std::uint64_t sum, std::int64_t num_bytes) {
  return fmix64(sum ^ fmix64(static_cast<std::uint64_t>(num_bytes)));
}

TOPOEP_HOST_DEVICE inline std::int64_t encoded_plan_size(const PlanView& plan) {
  return kPlanHeaderBytes + 4 * static_cast<std::int64_t>(plan.num_ranks) * plan.slots_per_rank +
         8 + kRouteBytes * plan.num_routes;
}

TOPOEP_HOST_DEVICE inline std::int64_t encoded_word_count(const PlanView& plan) {
  return (encoded_plan_size(plan) + 7) / 8;
}

// Byte `offset` of the encoding, computed from the plan's fields alone (no buffer), so that
// GPU threads can hash disjoint words in parallel. 0 past the end (the padding).
TOPOEP_HOST_DEVICE inline std::uint8_t encoded_plan_byte(const PlanView& plan,
                                                         std::int64_t offset) {
  auto byte_of = [](std::uint64_t value, std::int64_t index) {
    return static_cast<std::uint8_t>(value >> (8 * index));
  };
  if (offset < 8) return static_cast<std::uint8_t>("TOPOEPPL"[offset]);
  if (offset < kPlanHeaderBytes) {
    const std::int64_t field = (offset - 8) / 4;
    const std::uint32_t values[4] = {kPlanEncodingVersion,
                                     static_cast<std::uint32_t>(plan.num_ranks),
                                     static_cast<std::uint32_t>(plan.num_experts),
                                     static_cast<std::uint32_t>(plan.slots_per_rank)};
    return byte_of(values[field], (offset - 8) % 4);
  }
  offset -= kPlanHeaderBytes;
  const std::int64_t slot_bytes =
      4 * static_cast<std::int64_t>(plan.num_ranks) * plan.slots_per_rank;
  if (offset < slot_bytes) {
    return byte_of(static_cast<std::uint32_t>(plan.replica_expert[offset / 4]), offset % 4);
  }
  offset -= slot_bytes;
  if (offset < 8) return byte_of(static_cast<std::uint64_t>(plan.num_routes), offset);
  offset -= 8;
  if (offset >= kRouteBytes * plan.num_routes) return 0;
  const Route& route = plan.routes[offset / kRouteBytes];
  const std::int64_t within = offset % kRouteBytes;
  if (within < 4) return byte_of(static_cast<std::uint32_t>(route.src), within);
  if (within < 8) return byte_of(static_cast<std::uint32_t>(route.expert), within - 4);
  if (within < 12) return byte_of(static_cast<std::uint32_t>(route.dst), within - 8);
  return byte_of(static_cast<std::uint64_t>(route.tokens), within - 12);
}

// Encoded word `index`: bytes 8 * index .. 8 * index + 7 as a little-endian u64.
TOPOEP_HOST_DEVICE inline std::uint64_t encoded_plan_word(const PlanView& plan,
                                                          std::int64_t index) {
  std::uint64_t word = 0;
  for (int i = 0; i < 8; ++i) {
    word |= static_cast<std::uint64_t>(encoded_plan_byte(plan, 8 * index + i)) << (8 * i);
  }
  return word;
}

// The canonical bytes, e.g. to store a plan or diff two plans. Length encoded_plan_size().
std::vector<std::uint8_t> encode_plan(const Plan& plan);

// Plan hash v1 (above) on the host, single-threaded.
std::uint64_t plan_hash(const Plan& plan);

// Plan hash v1 of already encoded bytes (for checks against encode_plan's output).
std::uint64_t plan_hash_of_bytes(const std::vector<std::uint8_t>& bytes);

// "0x" followed by 16 lower-case hex digits.
std::string format_plan_hash(std::uint64_t hash);

}  // namespace topoep
