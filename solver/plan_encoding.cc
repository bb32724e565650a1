#include "solver/plan_encoding.h"

#include <cstdio>
#include <cstring>

namespace topoep {
namespace {

// Writes `value`'s low `size` bytes at `out`, least significant first, and advances `out`.
void put_little_endian(std::uint8_t*& out, std::uint64_t value, int size) {
  for (int i = 0; i < size; ++i) *out++ = static_cast<std::uint8_t>(value >> (8 * i));
}

// The little-endian u64 of `size` (1..8) bytes, zero-extended.
std::uint64_t load_little_endian_word(const std::uint8_t* bytes, int size) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::uint64_t word = 0;
  std::memcpy(&word, bytes, static_cast<std::size_t>(size));  // fast path: host order is LE
  return word;
#else
  std::uint64_t word = 0;
  for (int i = 0; i < size; ++i) word |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
  return word;
#endif
}

}  // namespace

std::vector<std::uint8_t> encode_plan(const Plan& plan) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(encoded_plan_size(view_of(plan))));
  std::uint8_t* out = bytes.data();
  for (const char c : {'T', 'O', 'P', 'O', 'E', 'P', 'P', 'L'})
    *out++ = static_cast<std::uint8_t>(c);
  put_little_endian(out, kPlanEncodingVersion, 4);
  put_little_endian(out, static_cast<std::uint32_t>(plan.num_ranks), 4);
  put_little_endian(out, static_cast<std::uint32_t>(plan.num_experts), 4);
  put_little_endian(out, static_cast<std::uint32_t>(plan.slots_per_rank), 4);
  for (const ExpertId expert : plan.replica_expert) {
    put_little_endian(out, static_cast<std::uint32_t>(expert), 4);
  }
  put_little_endian(out, plan.routes.size(), 8);
  for (const Route& route : plan.routes) {
    put_little_endian(out, static_cast<std::uint32_t>(route.src), 4);
    put_little_endian(out, static_cast<std::uint32_t>(route.expert), 4);
    put_little_endian(out, static_cast<std::uint32_t>(route.dst), 4);
    put_little_endian(out, static_cast<std::uint64_t>(route.tokens), 8);
  }
  return bytes;
}

std::uint64_t plan_hash_of_bytes(const std::vector<std::uint8_t>& bytes) {
  const std::int64_t num_bytes = static_cast<std::int64_t>(bytes.size());
  const std::int64_t num_full_words = num_bytes / 8;
  std::uint64_t sum = 0;
  for (std::int64_t index = 0; index < num_full_words; ++index) {
    sum += hash_word_term(load_little_endian_word(bytes.data() + 8 * index, 8), index);
  }
  if (num_bytes % 8 != 0) {
    sum += hash_word_term(
        load_little_endian_word(bytes.data() + 8 * num_full_words, static_cast<int>(num_bytes % 8)),
        num_full_words);
  }
  return hash_finish(sum, num_bytes);
}

std::uint64_t plan_hash(const Plan& plan) { return plan_hash_of_bytes(encode_plan(plan)); }

std::string format_plan_hash(std::uint64_t hash) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace topoep
