#include "solver/plan_encoding.h"

#include <cstdio>
#include <vector>

namespace topoep {
namespace {

// Emits a plan's canonical encoding field by field: every field is a 4- or 8-byte
// little-endian integer, so one description of the layout serves both the byte encoder and
// the hash, which assembles 64-bit words from the fields without writing the bytes anywhere.
template <typename Sink>
void emit_plan_fields(const Plan& plan, Sink& sink) {
  std::uint64_t magic = 0;
  for (int i = 7; i >= 0; --i) magic = magic << 8 | static_cast<std::uint8_t>("TOPOEPPL"[i]);
  sink.put64(magic);
  sink.put32(kPlanEncodingVersion);
  sink.put32(static_cast<std::uint32_t>(plan.num_ranks));
  sink.put32(static_cast<std::uint32_t>(plan.num_experts));
  sink.put32(static_cast<std::uint32_t>(plan.slots_per_rank));
  for (const ExpertId expert : plan.replica_expert) sink.put32(static_cast<std::uint32_t>(expert));
  sink.put64(plan.routes.size());
  for (const Route& route : plan.routes) {
    sink.put32(static_cast<std::uint32_t>(route.src));
    sink.put32(static_cast<std::uint32_t>(route.expert));
    sink.put32(static_cast<std::uint32_t>(route.dst));
    sink.put64(static_cast<std::uint64_t>(route.tokens));
  }
}

// Appends each field's bytes, least significant first.
struct ByteSink {
  std::vector<std::uint8_t>& bytes;
  void put(std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i) bytes.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
  }
  void put32(std::uint32_t value) { put(value, 4); }
  void put64(std::uint64_t value) { put(value, 8); }
};

// key(i) of plan hash v1 for words 0 .. count - 1. The keys depend on the index alone, so one
// table per thread serves every plan (half of each word's hashing work, computed once).
const std::uint64_t* word_keys(std::int64_t count) {
  thread_local std::vector<std::uint64_t> keys;
  for (auto i = static_cast<std::int64_t>(keys.size()); i < count; ++i) {
    keys.push_back(hash_word_key(i));
  }
  return keys.data();
}

// Plan hash v1 of a field stream. Fields are 4 or 8 bytes and the encoding starts 8-aligned, so
// a word is either complete or holds one 4-byte field waiting for its high half (`half`);
// the last word is zero-padded at finish().
class HashSink {
 public:
  explicit HashSink(std::int64_t words) : keys_(word_keys(words)) {}

  void put32(std::uint32_t value) {
    if (half_) {
      word(pending_ | static_cast<std::uint64_t>(value) << 32);
    } else {
      pending_ = value;
    }
    half_ = !half_;
  }
  void put64(std::uint64_t value) {
    if (half_) {
      word(pending_ | value << 32);
      pending_ = value >> 32;
    } else {
      word(value);
    }
  }
  std::uint64_t finish(std::int64_t num_bytes) {
    if (half_) word(pending_);
    return hash_finish(sum_, num_bytes);
  }

 private:
  void word(std::uint64_t value) { sum_ += hash_word_term_keyed(value, keys_[index_++]); }

  const std::uint64_t* keys_;  // [words]: hash_word_key(i)
  std::uint64_t sum_ = 0;
  std::int64_t index_ = 0;
  std::uint64_t pending_ = 0;
  bool half_ = false;
};

}  // namespace

std::vector<std::uint8_t> encode_plan(const Plan& plan) {
  std::vector<std::uint8_t> bytes;
  bytes.reserve(static_cast<std::size_t>(encoded_plan_size(view_of(plan))));
  ByteSink sink{bytes};
  emit_plan_fields(plan, sink);
  return bytes;
}

std::uint64_t plan_hash_of_bytes(const std::vector<std::uint8_t>& bytes) {
  const auto size = static_cast<std::int64_t>(bytes.size());
  HashSink sink((size + 7) / 8);
  for (std::int64_t i = 0; i < size; i += 8) {  // whole words; the last one zero-padded
    std::uint64_t word = 0;
    for (std::int64_t b = i; b < i + 8 && b < size; ++b) {
      word |= static_cast<std::uint64_t>(bytes[static_cast<std::size_t>(b)]) << (8 * (b - i));
    }
    sink.put64(word);
  }
  return sink.finish(size);
}

std::uint64_t plan_hash(const Plan& plan) {
  const PlanView view = view_of(plan);
  HashSink sink(encoded_word_count(view));
  emit_plan_fields(plan, sink);
  return sink.finish(encoded_plan_size(view));
}

std::string format_plan_hash(std::uint64_t hash) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(hash));
  return text;
}

}  // namespace topoep
