// The JSON lines importer's two readers of a line (traces/jsonl_line.h): whatever the fast path
// takes, nlohmann's SAX reader takes too and reads the same; what it leaves, SAX decides.

#include "traces/jsonl_line.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/file_input_error.h"

namespace topoep {
namespace {

const char kLine[] =
    R"({"step": 3, "microbatch": 1, "layer": 12, "rank": 7, "counts": [0, 5, 12]})";

// Fast and SAX agree wherever the fast path decides; returns whether the fast path did.
bool fast_agrees_with_sax(const std::string& line) {
  CountsLine fast, sax;
  const bool fast_took = read_counts_line_fast(line, &fast);
  const bool sax_took = read_counts_line(line, &sax);
  if (fast_took) {
    EXPECT_TRUE(sax_took) << line;
    EXPECT_EQ(std::vector<int>(fast.keys, fast.keys + 4), std::vector<int>(sax.keys, sax.keys + 4))
        << line;
    EXPECT_EQ(fast.counts, sax.counts) << line;
    EXPECT_EQ(fast.top_k, sax.top_k) << line;
  }
  return fast_took;
}

TEST(JsonlLine, TheFastPathReadsAPlainLineAsSaxDoes) {
  ASSERT_TRUE(fast_agrees_with_sax(kLine));
  CountsLine line;
  ASSERT_TRUE(read_counts_line_fast(kLine, &line));
  EXPECT_EQ(std::vector<int>(line.keys, line.keys + 4), (std::vector<int>{3, 1, 12, 7}));
  EXPECT_EQ(line.counts, (std::vector<TokenCount>{0, 5, 12}));
  EXPECT_TRUE(fast_agrees_with_sax(R"({"counts":[1],"rank":0,"layer":0,"microbatch":0,"step":0})"));
  EXPECT_TRUE(
      fast_agrees_with_sax(" \t{ \"step\" :0 ,\"microbatch\":0,\"layer\":0,\"rank\":0,"
                           "\"counts\":[ 999999999999999999 ] }\r"));
}

// Everything outside its subset goes to SAX, which may still take it.
TEST(JsonlLine, TheFastPathLeavesTheRestToSax) {
  const std::string base = R"("microbatch": 0, "layer": 0, "rank": 0, "counts": [1])";
  for (const std::string& line : std::vector<std::string>{
           "{\"step\": 0, \"note\": \"x\", " + base + "}",  // an unknown field
           "{\"step\": 1, \"step\": 0, " + base + "}",      // a key given twice
           "{\"step\": -0, " + base + "}",                  // a sign
           "{\"step\": 0, " + base + ", \"counts\": [2]}",  // counts twice
           "{\"st\\u0065p\": 0, " + base + "}",             // an escape in a key
           "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, "
           "\"counts\": [1000000000000000000]}",  // 19 digits
           "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, "
           "\"counts\": [9223372036854775807]}",  // 2^63 - 1
       }) {
    EXPECT_FALSE(fast_agrees_with_sax(line)) << line;
    CountsLine read;
    EXPECT_TRUE(read_counts_line(line, &read)) << line;
  }
  for (const std::string& line : std::vector<std::string>{
           "{\"step\": 01, " + base + "}",   // a leading zero: not JSON
           "{\"step\": 1.0, " + base + "}",  // not an integer
           "{\"step\": 1e3, " + base + "}",
           "{\"step\": 0, " + base + "} x",  // trailing text
           "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, \"counts\": []}",
           "{\"step\": 1073741825, " + base + "}",  // beyond 2^30
           "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, "
           "\"counts\": [184467440737095516150]}",  // beyond 64 bits
       }) {
    EXPECT_FALSE(fast_agrees_with_sax(line)) << line;
    CountsLine read;
    EXPECT_FALSE(read_counts_line(line, &read)) << line;
  }
}

// The recorder's optional top_k: read by both readers, anywhere in the line; 0 where absent; a
// value outside [1, 2^16] or not an integer refused and named.
TEST(JsonlLine, TopKIsOptionalAndReadByBoth) {
  const std::string line =
      R"({"step":0,"microbatch":0,"layer":0,"rank":2,"top_k":8,"counts":[1,0]})";
  CountsLine read;
  ASSERT_TRUE(fast_agrees_with_sax(line));
  ASSERT_TRUE(read_counts_line_fast(line, &read));
  EXPECT_EQ(read.top_k, 8);
  ASSERT_TRUE(read_counts_line_fast(kLine, &read));
  EXPECT_EQ(read.top_k, 0);  // a line without one leaves none from the line before
  EXPECT_TRUE(fast_agrees_with_sax(R"({"top_k":65536,"counts":[1],"rank":0,"layer":0,)"
                                   R"("microbatch":0,"step":0})"));
  const std::string keys = R"("step": 0, "microbatch": 0, "layer": 0, "rank": 0, "counts": [1])";
  for (const std::string bad : {"0", "65537", "1.5", "\"8\"", "[8]", "-1"}) {
    const std::string refused = "{" + keys + ", \"top_k\": " + bad + "}";
    EXPECT_FALSE(fast_agrees_with_sax(refused)) << refused;
    EXPECT_FALSE(read_counts_line(refused, &read)) << refused;
    try {
      read_counts_line_or_throw("rec.jsonl", 4, refused, &read);
      ADD_FAILURE() << "took " << refused;
    } catch (const FileInputError& error) {
      EXPECT_EQ(error.field(), "line 4 top_k") << refused;
    }
  }
}

// Random edits of a good line over the characters JSON turns on: the fast path never takes a
// line SAX refuses or reads differently, and it still takes most of the lines SAX takes.
TEST(JsonlLine, RandomEditsNeverMakeTheFastPathDisagree) {
  const std::string alphabet = "0123456789 -.eE\"{}[],:\\\tcountsrepmlay_k";
  const std::string with_top_k =
      R"({"step": 3, "microbatch": 1, "layer": 12, "rank": 7, "top_k": 6, "counts": [0, 5, 12]})";
  std::mt19937_64 random(17);
  int fast = 0, sax = 0;
  for (int i = 0; i < 100000; ++i) {
    std::string line = i % 2 == 0 ? kLine : with_top_k;
    const int edits = 1 + static_cast<int>(random() % 3);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = random() % (line.size() + 1);
      const char c = alphabet[random() % alphabet.size()];
      switch (random() % 3) {
        case 0:
          line.insert(at, 1, c);
          break;
        case 1:
          if (at < line.size()) line[at] = c;
          break;
        default:
          if (at < line.size()) line.erase(at, 1);
      }
    }
    fast += fast_agrees_with_sax(line);
    CountsLine read;
    sax += read_counts_line(line, &read);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(sax, 1000);      // the edits kept many lines valid...
  EXPECT_GT(fast, sax / 2);  // ...and the fast path read most of those
}

TEST(JsonlLine, ALineNeitherReaderTakesIsNamedWithItsField) {
  CountsLine read;
  try {
    read_counts_line_or_throw("rec.jsonl", 9,
                              R"({"step": 0, "microbatch": 0, "layer": 0, "counts": [1]})", &read);
    ADD_FAILURE() << "a line without its rank was taken";
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.field(), "line 9 rank");
  }
}

}  // namespace
}  // namespace topoep
