#include "solver/plan_encoding.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

namespace topoep {
namespace {

// Writes the encoding's bytes in place, each field little-endian (one store on a
// little-endian host), into a buffer the caller sized (encoded_plan_size()).
struct PlaceSink {
  std::uint8_t* out;
  void put(std::uint64_t value, int size) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::memcpy(out, &value, static_cast<std::size_t>(size));
#else
    for (int i = 0; i < size; ++i) out[i] = static_cast<std::uint8_t>(value >> (8 * i));
#endif
    out += size;
  }
  void put32(std::uint32_t value) { put(value, 4); }
  void put64(std::uint64_t value) { put(value, 8); }
  void put_route(const Route& route) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    // src, expert and dst are the struct's first 12 bytes, in order: copied with the 4 bytes
    // of padding after them, which the tokens then overwrite (two stores instead of four).
    static_assert(
        offsetof(Route, expert) == 4 && offsetof(Route, dst) == 8 && offsetof(Route, tokens) == 16,
        "Route's fields are no longer laid out as the encoding");
    std::memcpy(out, &route, 16);
    std::memcpy(out + 12, &route.tokens, 8);
    out += kRouteBytes;
#else
    put32(static_cast<std::uint32_t>(route.src));
    put32(static_cast<std::uint32_t>(route.expert));
    put32(static_cast<std::uint32_t>(route.dst));
    put64(static_cast<std::uint64_t>(route.tokens));
#endif
  }
};

// Writes a plan's canonical encoding field by field into `out`: for the byte encoder, and into
// the hash's word buffer (whose last word the hash zeroes first: the padding). The sink is a
// local: its pointer cannot alias the bytes it writes, so it stays in a register.
void emit_plan_fields(const Plan& plan, std::uint8_t* out) {
  PlaceSink sink{out};
  std::uint64_t magic = 0;
  for (int i = 7; i >= 0; --i) magic = magic << 8 | static_cast<std::uint8_t>("TOPOEPPL"[i]);
  sink.put64(magic);
  sink.put32(kPlanEncodingVersion);
  sink.put32(static_cast<std::uint32_t>(plan.num_ranks));
  sink.put32(static_cast<std::uint32_t>(plan.num_experts));
  sink.put32(static_cast<std::uint32_t>(plan.slots_per_rank));
  for (const ExpertId expert : plan.replica_expert) sink.put32(static_cast<std::uint32_t>(expert));
  sink.put64(plan.routes.size());
  for (const Route& route : plan.routes) sink.put_route(route);
}

// key(i) of plan hash v1 for words 0 .. count - 1. The keys depend on the index alone, so one
// table per thread serves every plan (half of each word's hashing work, computed once).
const std::uint64_t* word_keys(std::int64_t count) {
  thread_local std::vector<std::uint64_t> keys;
  for (auto i = static_cast<std::int64_t>(keys.size()); i < count; ++i) {
    keys.push_back(hash_word_key(i));
  }
  return keys.data();
}

// SUM of hash_word_term_keyed(words[i], keys[i]) mod 2^64, in eight lanes of independent sums
// (addition mod 2^64 is the same in any order): where the CPU has 64-bit vector multiplies
// the lanes are one vector, else they at least keep the multipliers busy.
// (Not under ThreadSanitizer: the clones' resolver runs before its runtime starts.)
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
std::uint64_t
sum_word_terms(const std::uint64_t* words, const std::uint64_t* keys, std::int64_t count) {
  std::uint64_t lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    for (int j = 0; j < 8; ++j) lanes[j] += hash_word_term_keyed(words[i + j], keys[i + j]);
  }
  std::uint64_t sum = 0;
  for (; i < count; ++i) sum += hash_word_term_keyed(words[i], keys[i]);
  for (const std::uint64_t lane : lanes) sum += lane;
  return sum;
}

}  // namespace

std::vector<std::uint8_t> encode_plan(const Plan& plan) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(encoded_plan_size(view_of(plan))));
  emit_plan_fields(plan, bytes.data());
  return bytes;
}

std::uint64_t plan_hash_of_bytes(const std::vector<std::uint8_t>& bytes) {
  const auto size = static_cast<std::int64_t>(bytes.size());
  const std::int64_t count = (size + 7) / 8;
  std::vector<std::uint64_t> words(static_cast<std::size_t>(count), 0);
  for (std::int64_t b = 0; b < size; ++b) {  // little-endian words, the last one zero-padded
    words[static_cast<std::size_t>(b / 8)] |=
        static_cast<std::uint64_t>(bytes[static_cast<std::size_t>(b)]) << (8 * (b % 8));
  }
  return hash_finish(sum_word_terms(words.data(), word_keys(count), count), size);
}

std::uint64_t plan_hash(const Plan& plan) {
  // The encoding is written out first, then hashed in one loop over its words, which the
  // compiler vectorizes where the CPU multiplies 64-bit lanes (GCC on x86-64: one clone per
  // instruction set, the best the CPU runs chosen when the program loads).
  const PlanView view = view_of(plan);
  const std::int64_t count = encoded_word_count(view);
  thread_local std::vector<std::uint64_t> words;
  words.resize(static_cast<std::size_t>(count));
  words.back() = 0;  // the zero padding of the last word
  emit_plan_fields(plan, reinterpret_cast<std::uint8_t*>(words.data()));
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
  for (std::uint64_t& word : words) word = __builtin_bswap64(word);  // read little-endian
#endif
  return hash_finish(sum_word_terms(words.data(), word_keys(count), count),
                     encoded_plan_size(view));
}

std::string format_plan_hash(std::uint64_t hash) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace topoep
