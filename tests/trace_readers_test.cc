// Readers of routing data: the solve CLI's counts JSON, ESFT text dumps, SGLang statistics,
// and token packing. Bad input must name the file and the field or line.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/file_input_error.h"
#include "traces/counts_json.h"
#include "traces/esft_import.h"
#include "traces/logical_count_reader.h"
#include "traces/sglang_stats.h"
#include "traces/token_files.h"
#include "traces/token_packing.h"

namespace topoep {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// The FileInputError's field (or "" when the error names no field), or "<no error>".
template <class F>
std::string file_error_field(F&& action, const std::string& expected_file) {
  try {
    action();
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.file(), expected_file);
    return error.field();
  }
  return "<no error>";
}

TEST(CountsJson, ReadsOneLayerOrSeveral) {
  const auto one = read_counts_json(write_temp("one.json", R"({"counts": [[1, 2], [3, 4]]})"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].at(1, 0), 3);
  const auto two = read_counts_json(write_temp(
      "two.json", R"({"layers": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]], "comment": "x"})"));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].at(1, 1), 8);
}

TEST(CountsJson, NamesTheBadField) {
  struct Case {
    const char* text;
    const char* field;
  };
  const Case cases[] = {
      {R"({"counts": [[1, 2], [3, -4]]})", "counts[1][1]"},
      {R"({"counts": [[1, 2], [3]]})", "counts[1]"},
      {R"({"counts": [[1, 2.5]]})", "counts[0][1]"},
      {R"({"counts": [[1, "2"]]})", "counts[0][1]"},
      {R"({"counts": [[1, 9223372036854775807]]})", "counts[0][1]"},
      {R"({"layers": [[[1, 2]], [[1, 2, 3]]]})", "layers[1]"},
      {R"({"counts": [[1]], "layers": []})", "layers"},
      {R"({"cuonts": [[1]]})", "counts"},
      {R"({"counts": [[1]], "extra": 1})", "extra"},
      {R"({"counts": []})", "counts"},
  };
  for (const Case& c : cases) {
    const std::string path = write_temp("bad.json", c.text);
    EXPECT_EQ(file_error_field([&] { read_counts_json(path); }, path), c.field) << c.text;
  }
  const std::string broken = write_temp("broken.json", "{\"counts\": [[1,");
  EXPECT_EQ(file_error_field([&] { read_counts_json(broken); }, broken), "");
}

TEST(EsftImport, ReadsTopKIdsPerTokenAndIgnoresWeights) {
  const std::string path =
      write_temp("esft.txt", "1\t2\t3\t4\t\t0.5\t0.5\t0.2\t0.8\n5\t6\t\t0.1\t0.9\n");
  const EsftLayer layer = read_esft_layer(path, 8, 2);
  ASSERT_EQ(layer.sequences.size(), 2u);
  EXPECT_EQ(layer.sequences[0], (std::vector<ExpertId>{1, 2, 3, 4}));
  EXPECT_EQ(layer.num_tokens(), 3);
}

TEST(EsftImport, NamesTheBadLine) {
  const std::string no_tab = write_temp("a.txt", "1\t2\t\t0.1\t0.2\n1\t2\n");
  EXPECT_EQ(file_error_field([&] { read_esft_layer(no_tab, 8, 2); }, no_tab), "line 2");
  const std::string bad_id = write_temp("b.txt", "1\t9\t\t0.1\t0.2\n");
  EXPECT_EQ(file_error_field([&] { read_esft_layer(bad_id, 8, 2); }, bad_id), "line 1");
  const std::string odd = write_temp("c.txt", "1\t2\t3\t\t0.1\n");
  EXPECT_EQ(file_error_field([&] { read_esft_layer(odd, 8, 2); }, odd), "line 1");
  EXPECT_EQ(file_error_field([] { read_esft_layer("/nonexistent/esft.txt", 8, 2); },
                             "/nonexistent/esft.txt"),
            "");
}

// ESFT publishes, beside each task's dumps, the share of token-expert assignments every expert
// got in every layer (summary.json "token_scores", rounded to 4 decimals): an independent
// account of what read_esft_layer() must count, on every task the shared folder holds.
TEST(EsftImport, CountsEveryRealLayerAsEsftsOwnSummaryDoes) {
  const char* shared = std::getenv("TOPOEP_SHARED_DIR");
  if (shared == nullptr) GTEST_SKIP() << "TOPOEP_SHARED_DIR is not set (tools/test sets it)";
  const std::filesystem::path root =
      std::filesystem::path(shared) / "traces" / "esft-deepseek-v2-lite";
  int layers_checked = 0;
  for (const auto& task : std::filesystem::directory_iterator(root)) {
    const std::filesystem::path summary_path = task.path() / "summary.json";
    if (!std::filesystem::exists(summary_path)) continue;
    const nlohmann::json summary = nlohmann::json::parse(std::ifstream(summary_path));
    for (const auto& [layer, scores] : summary.at("token_scores").items()) {
      const std::string file = (task.path() / ("expert_weights_" + layer + ".txt")).string();
      const EsftLayer read = read_esft_layer(file, kEsftExperts, kEsftTopK);
      std::vector<double> counts(kEsftExperts, 0.0);
      double assignments = 0;
      for (const auto& sequence : read.sequences) {
        for (const ExpertId e : sequence) counts[e] += 1;
        assignments += static_cast<double>(sequence.size());
      }
      ASSERT_GT(assignments, 0) << file;
      for (int e = 0; e < kEsftExperts; ++e) {
        const double published = scores.value(std::to_string(e), 0.0);
        EXPECT_NEAR(counts[e] / assignments, published, 0.00005 + 1e-9) << file << ", expert " << e;
      }
      ++layers_checked;
    }
  }
  EXPECT_GT(layers_checked, 0) << "no ESFT task with a summary.json under " << root;
}

// A .npy of `tokens` x 2 int32 expert ids declaring `shape` in its header.
std::string write_npy(const std::string& name, const std::string& shape, int tokens) {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(128 - 10 - header.size() - 1, ' ');  // a 128-byte aligned preamble
  header += "\n";
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream npy(path, std::ios::binary);
  npy.write("\x93NUMPY\x01\x00", 8);
  const char length[2] = {static_cast<char>(header.size()), 0};
  npy.write(length, 2);
  npy << header;
  for (int i = 0; i < 2 * tokens; ++i) npy.write(reinterpret_cast<const char*>(&i), 4);
  return path;
}

TEST(TopKNpy, ReadsTheDeclaredShape) {
  const std::string path = write_npy("ok.npy", "(3, 2)", 3);
  EXPECT_EQ(read_topk_npy(path, 8, 2).experts, (std::vector<ExpertId>{0, 1, 2, 3, 4, 5}));
}

// A header may declare more rows than the file holds: a clear error naming the shape, before
// anything is allocated (it used to allocate the declared size: std::bad_alloc).
TEST(TopKNpy, AShapeBeyondTheFileNamesTheShape) {
  const std::string huge = write_npy("huge.npy", "(99999999999, 2)", 3);
  EXPECT_EQ(file_error_field([&] { read_topk_npy(huge, 8, 2); }, huge), "shape");
  const std::string short_by_one = write_npy("short.npy", "(4, 2)", 3);
  EXPECT_EQ(file_error_field([&] { read_topk_npy(short_by_one, 8, 2); }, short_by_one), "shape");
  // No columns: refused before the size check divides by them (top-k 0 used to crash).
  const std::string empty_rows = write_npy("no_columns.npy", "(4, 0)", 0);
  EXPECT_EQ(file_error_field([&] { read_topk_npy(empty_rows, 8, 0); }, empty_rows), "shape");
}

// The header's length, also the file's word, is bounded before it is allocated (a fuzzer's
// 4 GiB header length ran out of memory); unknown format versions are refused.
TEST(TopKNpy, AHugeHeaderLengthOrAnUnknownVersionIsRefused) {
  const std::string huge = ::testing::TempDir() + "/huge_header.npy";
  std::ofstream(huge, std::ios::binary).write("\x93NUMPY\x02\x00\x00\x76\xff\xff{}", 14);
  const std::string version = ::testing::TempDir() + "/version.npy";
  std::ofstream(version, std::ios::binary).write("\x93NUMPY\x30\x00\x10\x00{}", 12);
  const auto message = [](const std::string& path) -> std::string {
    try {
      read_topk_npy(path, 8, 2);
    } catch (const FileInputError& error) {
      EXPECT_EQ(error.file(), path);
      return error.what();
    }
    return "<no error>";
  };
  EXPECT_NE(message(huge).find("declares a 4294931968-byte header"), std::string::npos)
      << message(huge);
  EXPECT_NE(message(version).find("has .npy format version 48"), std::string::npos)
      << message(version);
}

TEST(TokenPacking, PacksContiguousTokensOntoRanksAndDropsThePartialMicrobatch) {
  // 5 tokens of top-1 on 2 ranks x 2 tokens: one whole microbatch, token 4 dropped.
  const std::vector<ExpertId> stream = {0, 1, 1, 2, 0};
  const auto microbatches = pack_tokens_contiguous(stream, 1, 3, 2, 2);
  ASSERT_EQ(microbatches.size(), 1u);
  EXPECT_EQ(microbatches[0].values(), (std::vector<TokenCount>{1, 1, 0, 0, 1, 1}));
}

TEST(SglangStats, ReadsLogicalCountAndSamplesDeterministically) {
  const std::string path =
      write_temp("stats.json", R"({"logical_count": [[0, 0, 0], [10.0, 30.0, 60.0]]})");
  const auto layers = read_sglang_logical_count(path);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[1], (std::vector<std::int64_t>{10, 30, 60}));
  const RoutingCounts a = sample_counts_from_shares(layers[1], 4, 100, 2, 7);
  const RoutingCounts b = sample_counts_from_shares(layers[1], 4, 100, 2, 7);
  EXPECT_EQ(a.values(), b.values());
  EXPECT_EQ(a.total(), 4 * 100 * 2);
  const auto totals = a.expert_totals();
  EXPECT_GT(totals[2], totals[1]);
  EXPECT_GT(totals[1], totals[0]);
}

TEST(SglangStats, NamesTheBadField) {
  const std::string ragged = write_temp("r.json", R"({"logical_count": [[1, 2], [3]]})");
  EXPECT_EQ(file_error_field([&] { read_sglang_logical_count(ragged); }, ragged),
            "logical_count[1]");
  const std::string negative = write_temp("n.json", R"({"logical_count": [[1, -2]]})");
  EXPECT_EQ(file_error_field([&] { read_sglang_logical_count(negative); }, negative),
            "logical_count[0][1]");
  const std::string missing = write_temp("m.json", R"({"counts": []})");
  EXPECT_EQ(file_error_field([&] { read_sglang_logical_count(missing); }, missing),
            "logical_count");
  // Each count fits, their sum would not: the draws are below the layer's total.
  const std::string huge = write_temp("h.json", R"({"logical_count": [[5e18, 5e18]]})");
  EXPECT_EQ(file_error_field([&] { read_sglang_logical_count(huge); }, huge), "logical_count[0]");
}

TEST(SglangStats, ReadsSglangsPerPassCountsAndSumsThemAsTotals) {
  // Two passes of two layers of three experts, as SGLang's recorder keeps them ([pass][layer]
  // [expert]), beside the keys it writes (skipped, nested or not).
  const std::string path =
      write_temp("passes.json", R"({"rank": 0, "meta": {"a": [[1]]}, "logical_count": [
        [[0, 0, 0], [1, 2, 3]],
        [[0, 0, 0], [4, 5, 6]]], "after": [7, [8]]})");
  const SglangLogicalCount read = read_sglang_stats_file(path);
  EXPECT_TRUE(read.per_pass);
  EXPECT_EQ(read.passes, 2);
  EXPECT_EQ(read.layers, 2);
  EXPECT_EQ(read.experts, 3);
  EXPECT_EQ(std::vector<std::int64_t>(read.row(1, 1), read.row(1, 1) + 3),
            (std::vector<std::int64_t>{4, 5, 6}));
  const auto totals = read_sglang_logical_count(path);
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals[1], (std::vector<std::int64_t>{5, 7, 9}));
  // Run totals are one pass.
  const SglangLogicalCount run =
      read_sglang_stats_file(write_temp("run.json", R"({"logical_count": [[1, 2], [3, 4]]})"));
  EXPECT_FALSE(run.per_pass);
  EXPECT_EQ(run.passes, 1);
  EXPECT_EQ(run.layers, 2);
}

TEST(SglangStats, NamesTheBadFieldOfPerPassCounts) {
  const auto field = [](const std::string& name, const std::string& text) {
    const std::string path = write_temp(name, text);
    return file_error_field([&] { read_sglang_stats_file(path); }, path);
  };
  // Pass 1 has one layer where pass 0 has two.
  EXPECT_EQ(field("p1.json", R"({"logical_count": [[[1], [2]], [[3]]]})"), "logical_count[1]");
  // Layer 1 of pass 0 is one expert short.
  EXPECT_EQ(field("p2.json", R"({"logical_count": [[[1, 2], [3]]]})"), "logical_count[0][1]");
  // A count where pass 1's layer 0 should be an array, and an array where a count should be.
  EXPECT_EQ(field("p3.json", R"({"logical_count": [[[1, 2]], [5]]})"), "logical_count[1][0]");
  EXPECT_EQ(field("p4.json", R"({"logical_count": [[1, 2], [3, [4]]]})"), "logical_count[1][1]");
  EXPECT_EQ(field("p5.json", R"({"logical_count": [[[[1]]]]})"), "logical_count[0][0][0]");
  EXPECT_EQ(field("p6.json", R"({"logical_count": [[[1, "2"]]]})"), "logical_count[0][0][1]");
  EXPECT_EQ(field("p7.json", R"({"logical_count": [[{"a": 1}]]})"), "logical_count[0][0]");
  EXPECT_EQ(field("p8.json", R"({"logical_count": [[[1, 2.5]]]})"), "logical_count[0][0][1]");
  EXPECT_EQ(field("p9.json", R"([[1, 2]])"), "logical_count");
  EXPECT_EQ(field("p10.json", R"({"logical_count": [[[1, 2]]])"), "");  // torn: invalid JSON
  // A row's counts past what the sampler draws below; passes summed past it too.
  EXPECT_EQ(field("p11.json", R"({"logical_count": [[[5e18, 5e18]]]})"), "logical_count[0][0]");
  const std::string twice = write_temp("p12.json", R"({"logical_count": [[[5e18]], [[5e18]]]})");
  EXPECT_EQ(file_error_field([&] { read_sglang_logical_count(twice); }, twice), "logical_count");
}

}  // namespace
}  // namespace topoep
