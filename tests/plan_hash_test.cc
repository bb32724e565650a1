#include <gtest/gtest.h>

#include <functional>
#include <utility>

#include "solver/plan_encoding.h"
#include "tests/plan_fixtures.h"

namespace topoep {
namespace {

Plan tiny_plan() {
  Plan plan;
  plan.num_ranks = 2;
  plan.num_experts = 2;
  plan.slots_per_rank = 1;
  plan.replica_expert = {kNoExpert, 0};
  plan.routes = {{0, 0, 1, 3}};
  return plan;
}

TEST(PlanEncoding, WritesTheDocumentedLittleEndianLayout) {
  // Hand-derived from the layout in solver/plan_encoding.h.
  // clang-format off
  const std::vector<std::uint8_t> expected = {
      'T', 'O', 'P', 'O', 'E', 'P', 'P', 'L',  // magic
      1, 0, 0, 0,                              // version
      2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,      // ranks, experts, slots
      0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0,      // slots: empty, expert 0
      1, 0, 0, 0, 0, 0, 0, 0,                  // one route
      0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,      // src 0, expert 0, dst 1
      3, 0, 0, 0, 0, 0, 0, 0,                  // 3 tokens
  };
  // clang-format on
  EXPECT_EQ(encode_plan(tiny_plan()), expected);
}

// Golden values of plan hash v1, computed independently of this code by
// tests/plan_hash_reference.py (which the plan_hash_reference test runs with these values).
TEST(PlanHash, MatchesGoldenValues) {
  EXPECT_EQ(plan_hash(tiny_plan()), 0x31edf12dbb96fd50ull);
  EXPECT_EQ(plan_hash(testing::small_balanced_plan()), 0x79ad7f63354b26b4ull);
}

TEST(PlanHash, IsTheHashOfTheEncodedBytes) {
  const Plan plan = testing::small_balanced_plan();
  EXPECT_EQ(plan_hash_of_bytes(encode_plan(plan)), plan_hash(plan));
}

// plan_hash streams the encoding in batches; words that straddle a batch (here: 3 slots of 4
// bytes, then more than one batch of routes) must hash as the word-by-word definition says.
TEST(PlanHash, StreamedHashEqualsTheWordByWordDefinitionAcrossBatchBoundaries) {
  Plan plan;
  plan.num_ranks = 3;
  plan.num_experts = 200;
  plan.slots_per_rank = 1;
  plan.replica_expert = {5, kNoExpert, 7};
  for (RankId src = 0; src < 3; ++src) {
    for (ExpertId e = 0; e < 200; ++e) plan.routes.push_back({src, e, e % 3, 1 + src * 1000 + e});
  }
  const PlanView view = view_of(plan);
  std::uint64_t sum = 0;
  for (std::int64_t i = 0; i < encoded_word_count(view); ++i) {
    sum += hash_word_term(encoded_plan_word(view, i), i);
  }
  EXPECT_EQ(plan_hash(plan), hash_finish(sum, encoded_plan_size(view)));
  EXPECT_EQ(plan_hash(plan), plan_hash_of_bytes(encode_plan(plan)));
}

// Routes are 20 bytes, so they straddle 8-byte words in a pattern that repeats every two routes,
// and whether the first starts on a word boundary depends on the slot count's parity. Every mix
// must hash as the word-by-word definition says, with both halves of each tokens field used.
TEST(PlanHash, EqualsTheWordByWordDefinitionForEverySlotAndRouteParity) {
  for (const int num_ranks : {2, 3}) {
    for (int num_routes = 0; num_routes <= 7; ++num_routes) {
      Plan plan;
      plan.num_ranks = num_ranks;
      plan.num_experts = 50;
      plan.slots_per_rank = 1;
      plan.replica_expert.assign(num_ranks, kNoExpert);
      for (int i = 0; i < num_routes; ++i) {
        // Tokens past 2^32 so that both halves of the 8-byte field matter.
        plan.routes.push_back(
            {i % num_ranks, i, (i + 1) % num_ranks, (TokenCount{i} << 33) + 7 * i + 1});
      }
      const PlanView view = view_of(plan);
      std::uint64_t sum = 0;
      for (std::int64_t w = 0; w < encoded_word_count(view); ++w) {
        sum += hash_word_term(encoded_plan_word(view, w), w);
      }
      EXPECT_EQ(plan_hash(plan), hash_finish(sum, encoded_plan_size(view)))
          << num_ranks << " ranks, " << num_routes << " routes";
    }
  }
}

// The GPU hashes words it computes byte by byte from the plan's fields; they must be the bytes
// of encode_plan, including the zero padding of the last word.
TEST(PlanEncoding, BytesFromFieldsMatchTheEncoder) {
  for (const Plan& plan : {tiny_plan(), testing::small_balanced_plan()}) {
    const PlanView view = view_of(plan);
    const std::vector<std::uint8_t> bytes = encode_plan(plan);
    ASSERT_EQ(static_cast<std::int64_t>(bytes.size()), encoded_plan_size(view));
    for (std::int64_t offset = 0; offset < 8 * encoded_word_count(view); ++offset) {
      const std::uint8_t expected =
          offset < static_cast<std::int64_t>(bytes.size()) ? bytes[offset] : 0;
      ASSERT_EQ(encoded_plan_byte(view, offset), expected) << "offset " << offset;
    }
  }
}

TEST(PlanHash, ChangesWhenAnyFieldChanges) {
  const Plan base = testing::small_balanced_plan();
  const std::uint64_t base_hash = plan_hash(base);
  const std::vector<std::function<void(Plan&)>> edits = {
      [](Plan& p) { p.num_ranks += 1; },
      [](Plan& p) { p.num_experts += 1; },
      [](Plan& p) { p.slots_per_rank += 1; },
      [](Plan& p) { p.replica_expert[2] = 1; },
      [](Plan& p) { p.replica_expert[3] = 0; },
      [](Plan& p) { p.routes[3].src = 2; },
      [](Plan& p) { p.routes[3].expert = 6; },
      [](Plan& p) { p.routes[3].dst = 1; },
      [](Plan& p) { p.routes[3].tokens += 1; },
      [](Plan& p) { p.routes.pop_back(); },
      [](Plan& p) { std::swap(p.routes[0], p.routes[1]); },
  };
  for (std::size_t i = 0; i < edits.size(); ++i) {
    Plan edited = base;
    edits[i](edited);
    EXPECT_NE(plan_hash(edited), base_hash) << "edit " << i;
  }
}

TEST(PlanHash, IsStableAcrossRepeatedCallsAndCopies) {
  const Plan plan = testing::small_balanced_plan();
  const Plan copy = plan;
  EXPECT_EQ(plan_hash(plan), plan_hash(copy));
  EXPECT_EQ(plan_hash(plan), plan_hash(plan));
}

TEST(PlanHash, FormatsAsSixteenHexDigits) {
  EXPECT_EQ(format_plan_hash(0x31edf12dbb96fd50ull), "0x31edf12dbb96fd50");
  EXPECT_EQ(format_plan_hash(1), "0x0000000000000001");
}

}  // namespace
}  // namespace topoep
