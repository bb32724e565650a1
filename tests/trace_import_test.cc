// Importers into the trace format: ESFT and SGLang data from ../shared/traces (read in place;
// skipped without TOPOEP_SHARED_DIR) and JSON lines, with errors naming file and line.

#include "traces/trace_import.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/file_input_error.h"
#include "traces/esft_import.h"
#include "traces/sglang_stats.h"
#include "traces/token_packing.h"
#include "traces/trace_reader.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

std::string shared_dir() {
  const char* dir = std::getenv("TOPOEP_SHARED_DIR");
  return dir == nullptr ? "" : dir;
}

std::string fresh(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  fs::remove_all(path);
  return path;
}

TEST(TraceImport, EsftLawPacksEveryLayerIntoTheSameMicrobatches) {
  if (shared_dir().empty()) GTEST_SKIP() << "TOPOEP_SHARED_DIR is not set (tools/test sets it)";
  const std::string dir = shared_dir() + "/traces/esft-deepseek-v2-lite/law";
  const std::string out = fresh("law.trace");
  EXPECT_EQ(import_esft(dir, 26, 64, 6, ImportShape{32, 8, 64, 1}, out), 26 * 4);
  // Record 1 is step 0, layer 1: the first microbatch of expert_weights_2.txt, packed directly.
  const EsftLayer layer = read_esft_layer(dir + "/expert_weights_2.txt", 64, 6);
  std::vector<ExpertId> stream;
  for (const auto& sequence : layer.sequences)
    stream.insert(stream.end(), sequence.begin(), sequence.end());
  const RoutingCounts expected = pack_tokens_contiguous(stream, 6, 64, 32, 64)[0];
  TraceReader reader(out);
  TraceRecord record;
  ASSERT_TRUE(reader.next(record));
  ASSERT_TRUE(reader.next(record));
  EXPECT_EQ(record.layer, 1);
  EXPECT_EQ(record.counts.values(), expected.values());
  EXPECT_EQ(reader.metadata().packing["method"], "contiguous");
  EXPECT_EQ(validate_trace(out), 104);
}

TEST(TraceImport, SglangStatsSkipDenseLayersAndSampleEachRecordFromItsSeed) {
  if (shared_dir().empty()) GTEST_SKIP() << "TOPOEP_SHARED_DIR is not set (tools/test sets it)";
  const std::string path = shared_dir() + "/traces/sglang-deepseek-v3-stats/prefill_in1024.json";
  const std::string out = fresh("v3.trace");
  EXPECT_EQ(import_sglang_stats(path, 8, 1, ImportShape{32, 8, 128, 1}, 5, out), 58);
  const auto layers = read_sglang_logical_count(path);  // 61 layers, 0-2 dense
  TraceReader reader(out);
  TraceRecord record;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(reader.next(record));
  EXPECT_EQ(record.counts.values(),
            sample_counts_from_shares(layers[5], 32, 128, 8, 5 + 2).values());
}

std::string write_lines(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(TraceImport, JsonLinesInAnyOrderBecomeRecordsInTraceOrder) {
  const std::string path =
      write_lines("ok.jsonl",
                  R"({"step": 0, "microbatch": 0, "layer": 1, "rank": 1, "counts": [4, 0, 0]}
{"step": 0, "microbatch": 0, "layer": 0, "rank": 0, "counts": [1, 2, 3]}
{"step": 0, "microbatch": 0, "layer": 0, "rank": 1, "counts": [0, 5, 1]}
{"step": 0, "microbatch": 0, "layer": 1, "rank": 0, "counts": [2, 2, 2]}
)");
  const std::string out = fresh("jsonl.trace");
  EXPECT_EQ(import_jsonl(path, 2, 1, out), 2);
  TraceReader reader(out);
  TraceRecord record;
  ASSERT_TRUE(reader.next(record));
  EXPECT_EQ(record.counts.values(), (std::vector<TokenCount>{1, 2, 3, 0, 5, 1}));
  ASSERT_TRUE(reader.next(record));
  EXPECT_EQ(record.layer, 1);
  EXPECT_EQ(record.counts.values(), (std::vector<TokenCount>{2, 2, 2, 4, 0, 0}));
}

std::string import_error(const std::string& text) {
  const std::string path = write_lines("bad.jsonl", text);
  try {
    import_jsonl(path, 1, 1, fresh("bad.trace"));
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.file(), path);
    EXPECT_FALSE(fs::exists(::testing::TempDir() + "/bad.trace"));  // nothing half-written
    return error.field().empty() ? error.what() : error.field();
  }
  return "<no error>";
}

TEST(TraceImport, JsonLinesErrorsNameTheLine) {
  EXPECT_EQ(
      import_error(
          "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, \"counts\": [1]}\n{oops\n"),
      "line 2");
  EXPECT_EQ(import_error(
                "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": -1, \"counts\": [1]}\n"),
            "line 1 rank");
  EXPECT_EQ(
      import_error(
          "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, \"counts\": [1, -2]}\n"),
      "line 1 counts");
  EXPECT_EQ(import_error(
                "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, \"counts\": [1]}\n"
                "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, \"counts\": [1]}\n"),
            "line 2");
  EXPECT_EQ(
      import_error(
          "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, \"counts\": [1]}\n"
          "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 1, \"counts\": [1, 2]}\n"),
      "line 2 counts");
  const std::string missing = import_error(
      "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, \"counts\": [1]}\n"
      "{\"step\": 0, \"microbatch\": 0, \"layer\": 1, \"rank\": 1, \"counts\": [1]}\n");
  EXPECT_NE(missing.find("no line for step 0, microbatch 0, layer 0, rank 1"), std::string::npos)
      << missing;
}

}  // namespace
}  // namespace topoep
