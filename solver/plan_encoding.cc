#include "solver/plan_encoding.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace topoep {
namespace {

// Writes `value`'s low `size` bytes at `out`, least significant first, and advances `out`.
void put_little_endian(std::uint8_t*& out, std::uint64_t value, int size) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::memcpy(out, &value, static_cast<std::size_t>(size));  // fast path: host order is LE
  out += size;
#else
  for (int i = 0; i < size; ++i) *out++ = static_cast<std::uint8_t>(value >> (8 * i));
#endif
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

// Streams a plan's canonical bytes through `sink` in pieces: the header and slots first, then
// routes in batches, so that hashing never materialises the whole encoding.
template <typename Sink>
void stream_plan_bytes(const Plan& plan, Sink&& sink) {
  std::uint8_t buffer[kRouteBytes * 256];
  std::uint8_t* out = buffer;
  for (const char c : {'T', 'O', 'P', 'O', 'E', 'P', 'P', 'L'})
    *out++ = static_cast<std::uint8_t>(c);
  put_little_endian(out, kPlanEncodingVersion, 4);
  put_little_endian(out, static_cast<std::uint32_t>(plan.num_ranks), 4);
  put_little_endian(out, static_cast<std::uint32_t>(plan.num_experts), 4);
  put_little_endian(out, static_cast<std::uint32_t>(plan.slots_per_rank), 4);
  sink(buffer, out - buffer);
  for (std::size_t begin = 0; begin < plan.replica_expert.size(); begin += 256) {
    const std::size_t end = std::min(plan.replica_expert.size(), begin + 256);
    out = buffer;
    for (std::size_t j = begin; j < end; ++j) {
      put_little_endian(out, static_cast<std::uint32_t>(plan.replica_expert[j]), 4);
    }
    sink(buffer, out - buffer);
  }
  out = buffer;
  put_little_endian(out, plan.routes.size(), 8);
  sink(buffer, out - buffer);
  for (std::size_t begin = 0; begin < plan.routes.size(); begin += 256) {
    const std::size_t end = std::min(plan.routes.size(), begin + 256);
    out = buffer;
    for (std::size_t i = begin; i < end; ++i) {
      const Route& route = plan.routes[i];
      put_little_endian(out, static_cast<std::uint32_t>(route.src), 4);
      put_little_endian(out, static_cast<std::uint32_t>(route.expert), 4);
      put_little_endian(out, static_cast<std::uint32_t>(route.dst), 4);
      put_little_endian(out, static_cast<std::uint64_t>(route.tokens), 8);
    }
    sink(buffer, out - buffer);
  }
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

// Plan hash v1 over the `words` words of an encoding arriving in pieces: whole words are hashed
// as soon as they are complete, the last partial word at finish().
class StreamingPlanHash {
 public:
  explicit StreamingPlanHash(std::int64_t words) : keys_(word_keys(words)) {}

  void add(const std::uint8_t* bytes, std::int64_t size) {
    total_ += size;
    while (size > 0 && pending_size_ > 0) {  // complete the word a previous piece began
      pending_[pending_size_++] = *bytes++;
      --size;
      if (pending_size_ == 8) flush_pending();
    }
    for (; size >= 8; bytes += 8, size -= 8) {
      sum_ += hash_word_term_keyed(load_little_endian_word(bytes, 8), keys_[index_++]);
    }
    for (; size > 0; --size) pending_[pending_size_++] = *bytes++;
  }
  std::uint64_t finish() {
    if (pending_size_ > 0) {
      sum_ +=
          hash_word_term_keyed(load_little_endian_word(pending_, pending_size_), keys_[index_++]);
    }
    return hash_finish(sum_, total_);
  }

 private:
  void flush_pending() {
    sum_ += hash_word_term_keyed(load_little_endian_word(pending_, 8), keys_[index_++]);
    pending_size_ = 0;
  }
  const std::uint64_t* keys_;  // [words]: hash_word_key(i)
  std::uint64_t sum_ = 0;
  std::int64_t index_ = 0;
  std::int64_t total_ = 0;
  std::uint8_t pending_[8] = {};
  int pending_size_ = 0;
};

}  // namespace

std::vector<std::uint8_t> encode_plan(const Plan& plan) {
  std::vector<std::uint8_t> bytes;
  bytes.reserve(static_cast<std::size_t>(encoded_plan_size(view_of(plan))));
  stream_plan_bytes(plan, [&](const std::uint8_t* piece, std::int64_t size) {
    bytes.insert(bytes.end(), piece, piece + size);
  });
  return bytes;
}

std::uint64_t plan_hash_of_bytes(const std::vector<std::uint8_t>& bytes) {
  StreamingPlanHash hash((static_cast<std::int64_t>(bytes.size()) + 7) / 8);
  hash.add(bytes.data(), static_cast<std::int64_t>(bytes.size()));
  return hash.finish();
}

std::uint64_t plan_hash(const Plan& plan) {
  StreamingPlanHash hash(encoded_word_count(view_of(plan)));
  stream_plan_bytes(plan,
                    [&](const std::uint8_t* piece, std::int64_t size) { hash.add(piece, size); });
  return hash.finish();
}

std::string format_plan_hash(std::uint64_t hash) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace topoep
