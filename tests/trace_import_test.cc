// Importers into the trace format: ESFT and SGLang data from ../shared/traces (read in place;
// skipped without TOPOEP_SHARED_DIR) and JSON lines, with errors naming file and line.

#include "traces/trace_import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "common/file_input_error.h"
#include "tests/input_error_field.h"
#include "traces/esft_import.h"
#include "traces/sglang_stats.h"
#include "traces/token_packing.h"
#include "traces/trace_reader.h"
#include "traces/unit_packing.h"

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
  EXPECT_EQ(import_esft(dir, 26, 64, 6, ImportShape{32, 8, 64, 1}, PackingOptions{}, out), 26 * 4);
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

TEST(TraceImport, FlameEncoderAndDecoderFilesBecomeEightLayers) {
  if (shared_dir().empty()) GTEST_SKIP() << "TOPOEP_SHARED_DIR is not set (tools/test sets it)";
  const std::string base = shared_dir() + "/traces/flame-moe-290m/";
  // Encoder: 2,048 tokens per layer file = one microbatch of 8 ranks x 256 tokens.
  const std::string encoder = fresh("encoder.trace");
  EXPECT_EQ(import_token_files("flame-csv", base + "encoder_32seqs_64tok", 64, 6,
                               ImportShape{8, 8, 256, 1},
                               PackingOptions{PackingMethod::kContiguous, 64, 0, 1}, encoder),
            8);
  EXPECT_EQ(TraceReader(encoder).metadata().num_layers, 8);
  // Decoder: 10 position files x 64 tokens per layer, concatenated in position order.
  const std::string decoder = fresh("decoder.trace");
  EXPECT_EQ(import_token_files("flame-csv", base + "decoder_64seqs_pos1-10", 64, 6,
                               ImportShape{8, 8, 80, 1}, PackingOptions{}, decoder),
            8);
  EXPECT_EQ(validate_trace(decoder), 8);
}

// The message of the FileInputError `action` throws, or "<no error>".
std::string file_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const FileInputError& error) {
    return error.what();
  }
  return "<no error>";
}

// A .npy v1 file of little-endian int32 `ids` whose header declares `shape` ("(4, 2)").
void write_npy(const std::string& path, const std::string& shape, const std::vector<int>& ids) {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(128 - 10 - header.size() - 1, ' ');  // 128-byte aligned preamble
  header += "\n";
  std::ofstream npy(path, std::ios::binary);
  npy.write("\x93NUMPY\x01\x00", 8);
  const char length[2] = {static_cast<char>(header.size()), 0};
  npy.write(length, 2);
  npy << header;
  for (const int id : ids) npy.write(reinterpret_cast<const char*>(&id), 4);
}

TEST(TraceImport, TopKCsvAndNpyFilesAgree) {
  const std::string csv_dir = fresh("topk_csv"), npy_dir = fresh("topk_npy");
  fs::create_directories(csv_dir);
  fs::create_directories(npy_dir);
  // Two layers (named layer2 and layer10: natural order puts 2 first), 4 tokens of top-2.
  const std::vector<std::vector<int>> layers = {{0, 1, 2, 3, 1, 2, 3, 0}, {3, 2, 1, 0, 0, 1, 2, 3}};
  const char* names[] = {"layer2", "layer10"};
  for (int l = 0; l < 2; ++l) {
    std::ofstream csv(csv_dir + "/" + names[l] + ".csv");
    csv << "expert_a,expert_b\n";
    for (int t = 0; t < 4; ++t) csv << layers[l][2 * t] << "," << layers[l][2 * t + 1] << "\n";
    write_npy(npy_dir + "/" + names[l] + ".npy", "(4, 2)", layers[l]);
  }
  // The same two layers as one [layers, tokens, top_k] array.
  const std::string stacked_dir = fresh("topk_npy_stacked");
  fs::create_directories(stacked_dir);
  std::vector<int> both = layers[0];
  both.insert(both.end(), layers[1].begin(), layers[1].end());
  write_npy(stacked_dir + "/routing.npy", "(2, 4, 2)", both);
  const std::string stacked = fresh("stacked.trace");
  EXPECT_EQ(import_token_files("topk-npy", stacked_dir, 4, 0, ImportShape{2, 1, 2, 1},
                               PackingOptions{}, stacked),
            2);
  const std::string a = fresh("a.trace"), b = fresh("b.trace");
  EXPECT_EQ(
      import_token_files("topk-csv", csv_dir, 4, 2, ImportShape{2, 1, 2, 1}, PackingOptions{}, a),
      2);
  EXPECT_EQ(
      import_token_files("topk-npy", npy_dir, 4, 2, ImportShape{2, 1, 2, 1}, PackingOptions{}, b),
      2);
  TraceReader ra(a), rb(b);
  TraceRecord x, y;
  ASSERT_TRUE(ra.next(x));
  ASSERT_TRUE(rb.next(y));
  // Layer 0 is layer2: rank 0 takes tokens (0,1), (2,3); rank 1 takes (1,2), (3,0).
  EXPECT_EQ(x.counts.values(), (std::vector<TokenCount>{1, 1, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(x.counts.values(), y.counts.values());
  ASSERT_TRUE(ra.next(x));
  ASSERT_TRUE(rb.next(y));
  EXPECT_EQ(x.counts.values(), y.counts.values());
  TraceReader rs(stacked);
  EXPECT_EQ(rs.metadata().num_layers, 2);
  EXPECT_EQ(rs.metadata().top_k, 2);
  // One file given as the input is a directory of that file alone.
  const std::string one_file = fresh("one_file.trace");
  EXPECT_EQ(import_token_files("topk-npy", stacked_dir + "/routing.npy", 4, 0,
                               ImportShape{2, 1, 2, 1}, PackingOptions{}, one_file),
            2);
  for (const std::string& each : {a, b, one_file}) {
    TraceReader layered(stacked), single(each);
    TraceRecord p, q;
    while (single.next(q)) {
      ASSERT_TRUE(layered.next(p));
      EXPECT_EQ(p.counts.values(), q.counts.values());
    }
    EXPECT_FALSE(layered.next(p));
  }
  // An id out of range is named by its layer and row; a shape of four dimensions is refused.
  write_npy(stacked_dir + "/routing.npy", "(2, 4, 2)",
            {0, 1, 2, 3, 1, 2, 3, 0, 3, 2, 1, 0, 0, 9, 2, 3});
  const std::string refused = fresh("stacked_refused.trace");
  EXPECT_EQ(file_error([&] {
              import_token_files("topk-npy", stacked_dir, 4, 2, ImportShape{2, 1, 2, 1},
                                 PackingOptions{}, refused);
            }),
            stacked_dir + "/routing.npy: field 'layer 1 row 2': expert id 9 is outside [0, 4)");
  write_npy(stacked_dir + "/routing.npy", "(1, 2, 4, 2)", both);
  EXPECT_EQ(file_error([&] {
              import_token_files("topk-npy", stacked_dir, 4, 2, ImportShape{2, 1, 2, 1},
                                 PackingOptions{}, refused);
            }),
            stacked_dir +
                "/routing.npy: field 'shape': must be [tokens, top_k] or [layers, tokens, top_k] "
                "(non-negative)");
  EXPECT_FALSE(fs::exists(refused));
}

TEST(TraceImport, LayersThatDoNotHoldTheSameTokensAreNamedByFileAndLine) {
  // ESFT: line 2 (a sequence) of layer 2 has 3 tokens where layer 1's has 2.
  const std::string esft = fresh("esft_mismatch");
  fs::create_directories(esft);
  std::ofstream(esft + "/expert_weights_1.txt") << "0\t1\t\t0.5\t0.5\n2\t3\t\t1\t1\n";
  std::ofstream(esft + "/expert_weights_2.txt") << "0\t1\t\t0.5\t0.5\n2\t3\t1\t\t1\t1\t1\n";
  const std::string out = fresh("esft_mismatch.trace");
  const std::string esft_error = file_error([&] {
    import_esft(esft, 2, 4, 1, ImportShape{1, 1, 1, 1}, PackingOptions{}, out);
  });
  EXPECT_EQ(esft_error, esft + "/expert_weights_2.txt: line 2 holds 3 tokens where " + esft +
                            "/expert_weights_1.txt's holds 2: every layer must hold the same "
                            "tokens, in the same order");
  EXPECT_FALSE(fs::exists(out));
  // Top-k CSV, one file per layer: the second file is a token short.
  const std::string topk = fresh("topk_mismatch");
  fs::create_directories(topk);
  std::ofstream(topk + "/layer1.csv") << "e\n0\n1\n2\n";
  std::ofstream(topk + "/layer2.csv") << "e\n0\n1\n";
  const std::string topk_error = file_error([&] {
    import_token_files("topk-csv", topk, 4, 1, ImportShape{1, 1, 1, 1}, PackingOptions{}, out);
  });
  EXPECT_EQ(topk_error, topk + "/layer2.csv: holds 2 tokens where " + topk +
                            "/layer1.csv holds 3: every layer must hold the same tokens, in the "
                            "same order");
  EXPECT_FALSE(fs::exists(out));
}

TEST(TraceImport, EsftTakesEveryLayerFileUnlessToldAndNamesTheFirstMissing) {
  const std::string dir = fresh("esft_layers");
  fs::create_directories(dir);
  for (int layer = 1; layer <= 3; ++layer) {
    std::ofstream(dir + "/expert_weights_" + std::to_string(layer) + ".txt")
        << "0\t1\t\t0.5\t0.5\n2\t3\t\t1\t1\n";
  }
  std::ofstream(dir + "/expert_weights_01.txt") << "not a layer file: a leading zero\n";
  std::ofstream(dir + "/summary.json") << "{}";
  const ImportShape shape{1, 1, 1, 1};
  const std::string all = fresh("esft_all.trace");
  // Two lines of two top-1 tokens: four microbatches of one token on one rank, a record a layer.
  EXPECT_EQ(import_esft(dir, 0, 4, 1, shape, PackingOptions{}, all), 4 * 3);
  EXPECT_EQ(TraceReader(all).metadata().num_layers, 3);
  const std::string first = fresh("esft_first.trace");
  EXPECT_EQ(import_esft(dir, 2, 4, 1, shape, PackingOptions{}, first), 4 * 2);

  const std::string out = fresh("esft_missing.trace");
  EXPECT_EQ(file_error([&] { import_esft(dir, 4, 4, 1, shape, PackingOptions{}, out); }),
            dir +
                "/expert_weights_4.txt: is missing (4 layers were asked for; the last layer "
                "file is expert_weights_3.txt)");
  std::ofstream(dir + "/expert_weights_5.txt") << "0\t1\t\t0.5\t0.5\n2\t3\t\t1\t1\n";
  EXPECT_EQ(file_error([&] { import_esft(dir, 0, 4, 1, shape, PackingOptions{}, out); }),
            dir +
                "/expert_weights_4.txt: is missing, yet the directory holds "
                "expert_weights_5.txt: every layer from 1 to the last must be there (a gap "
                "would shift the later layers' ids)");
  EXPECT_FALSE(fs::exists(out));
  // A layer file given for the directory is named, with what esft reads.
  EXPECT_EQ(file_error([&] {
              import_esft(dir + "/expert_weights_1.txt", 0, 4, 1, shape, PackingOptions{}, out);
            }),
            dir +
                "/expert_weights_1.txt: is a file; esft reads an ESFT task directory "
                "(expert_weights_<L>.txt for each layer L): give the directory");
  // A dump numbered from 0 starts there: layers 0 to 2.
  const std::string zero = fresh("esft_from_zero");
  fs::create_directories(zero);
  for (int layer = 0; layer <= 2; ++layer) {
    std::ofstream(zero + "/expert_weights_" + std::to_string(layer) + ".txt")
        << "0\t1\t\t0.5\t0.5\n2\t3\t\t1\t1\n";
  }
  const std::string from_zero = fresh("esft_from_zero.trace");
  EXPECT_EQ(import_esft(zero, 0, 4, 1, shape, PackingOptions{}, from_zero), 4 * 3);
  // Too few tokens for one microbatch: how many there are, and what would fill one.
  try {
    import_esft(dir, 3, 4, 1, ImportShape{2, 1, 3, 1}, PackingOptions{}, out);
    ADD_FAILURE() << "four tokens filled a microbatch of six";
  } catch (const InputError& error) {
    EXPECT_EQ(error.field(), "tokens_per_rank");
    EXPECT_NE(std::string(error.what())
                  .find("the data (4 tokens a layer) fills 0 microbatches of "
                        "2 x 3 tokens, fewer than one step of 1"),
              std::string::npos)
        << error.what();
  }
  const std::string empty = fresh("esft_empty");
  fs::create_directories(empty);
  EXPECT_EQ(file_error([&] { import_esft(empty, 0, 4, 1, shape, PackingOptions{}, out); }),
            empty + ": holds no ESFT layer files (expert_weights_<L>.txt, L from 1)");
}

TEST(TraceImport, PerTokenFilesSayTheirTopKAndFlameItsExperts) {
  // FLAME: 5 experts in the header, top-2 in the first row; every row is held to both.
  const std::string flame = fresh("flame_shape");
  fs::create_directories(flame);
  std::ofstream(flame + "/run_layer3.csv")
      << "layer_id,token_id,expert_0,expert_1,expert_2,expert_3,expert_4\n"
      << "3,0,0,0.4,0,0.6,0\n3,1,0.5,0,0,0,0.5\n";
  const ImportShape shape{1, 1, 1, 1};
  const std::string flame_out = fresh("flame_shape.trace");
  EXPECT_EQ(import_token_files("flame-csv", flame, 0, 0, shape, PackingOptions{}, flame_out), 2);
  const TraceMetadata m = TraceReader(flame_out).metadata();
  EXPECT_EQ(m.num_experts, 5);
  EXPECT_EQ(m.top_k, 2);
  std::ofstream(flame + "/run_layer4.csv")
      << "layer_id,token_id,expert_0,expert_1,expert_2,expert_3,expert_4\n"
      << "4,0,0,0.4,0.1,0.5,0\n4,1,0.5,0,0,0,0.5\n";
  const std::string out = fresh("flame_three.trace");
  EXPECT_EQ(file_error([&] {
              import_token_files("flame-csv", flame, 0, 0, shape, PackingOptions{}, out);
            }),
            flame + "/run_layer4.csv: field 'line 2': 3 experts selected, top-k is 2");
  EXPECT_FALSE(fs::exists(out));

  // Top-k CSV: its rows' width (after a header); the experts must be given.
  const std::string csv = fresh("topk_shape");
  fs::create_directories(csv);
  std::ofstream(csv + "/layer0.csv") << "a,b,c\n0,1,2\n3,2,1\n";
  const std::string csv_out = fresh("topk_shape.trace");
  EXPECT_EQ(import_token_files("topk-csv", csv, 4, 0, shape, PackingOptions{}, csv_out), 2);
  EXPECT_EQ(TraceReader(csv_out).metadata().top_k, 3);
  EXPECT_EQ(testing::input_error_field(
                [&] { import_token_files("topk-csv", csv, 0, 0, shape, PackingOptions{}, out); }),
            "num_experts");
  // A first file with no token cannot say it.
  const std::string blank = fresh("topk_blank");
  fs::create_directories(blank);
  std::ofstream(blank + "/layer0.csv") << "a,b\n";
  EXPECT_EQ(testing::input_error_field(
                [&] { import_token_files("topk-csv", blank, 4, 0, shape, PackingOptions{}, out); }),
            "top_k");
  EXPECT_FALSE(fs::exists(out));
}

TEST(TraceImport, JsonLinesThatCarryTheirTopKNeedNoneGivenAndMustAgree) {
  const std::string path = ::testing::TempDir() + "/lines_top_k.jsonl";
  const auto write = [&](int second_top_k) {
    std::ofstream lines(path);
    lines << R"({"step": 0, "microbatch": 0, "layer": 0, "rank": 0, "top_k": 2, "counts": [1, 1]})"
          << "\n"
          << R"({"step": 0, "microbatch": 0, "layer": 0, "rank": 1, "counts": [2, 0]})"
          << "\n"
          << R"({"step": 0, "microbatch": 0, "layer": 0, "rank": 2, "top_k": )" << second_top_k
          << R"(, "counts": [0, 2]})"
          << "\n";
  };
  write(2);
  int asked = 0;
  const TopKForExperts never = [&](int) { return ++asked; };
  const std::string out = fresh("lines_top_k.trace");
  EXPECT_EQ(import_jsonl(path, 0, 1, out, never), 1);
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(TraceReader(out).metadata().top_k, 2);
  const std::string refused = fresh("lines_top_k_refused.trace");
  EXPECT_EQ(testing::input_error_field([&] { import_jsonl(path, 1, 1, refused); }), "top_k");
  write(1);
  EXPECT_EQ(file_error([&] { import_jsonl(path, 0, 1, refused); }),
            path + ": field 'line 3 top_k': is 1 where " + path +
                " line 1's is 2: a recording has one top-k");
  EXPECT_FALSE(fs::exists(refused));
}

TEST(TraceImport, CountsWithoutTopKAskTheCallerWithTheirExpertCount) {
  const std::string path = ::testing::TempDir() + "/ask_top_k.jsonl";
  {
    std::ofstream lines(path);
    for (int rank = 0; rank < 2; ++rank) {
      lines << R"({"step": 0, "microbatch": 0, "layer": 0, "rank": )" << rank
            << R"(, "counts": [4, 0, 2, 2, 0, 0]})"
            << "\n";
    }
  }
  int asked = 0;
  const TopKForExperts two = [&](int num_experts) {
    asked = num_experts;
    return 2;
  };
  const std::string out = fresh("ask_top_k.trace");
  EXPECT_EQ(import_jsonl(path, 0, 1, out, two), 1);
  EXPECT_EQ(asked, 6);
  EXPECT_EQ(TraceReader(out).metadata().top_k, 2);
  // Given, it is not asked; not given and no one to ask, or an answer above the experts: named.
  asked = 0;
  const std::string given = fresh("given_top_k.trace");
  EXPECT_EQ(import_jsonl(path, 3, 1, given, two), 1);
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(TraceReader(given).metadata().top_k, 3);
  const std::string refused = fresh("refused_top_k.trace");
  EXPECT_EQ(testing::input_error_field([&] { import_jsonl(path, 0, 1, refused); }), "top_k");
  EXPECT_EQ(
      testing::input_error_field([&] { import_jsonl(path, 0, 1, refused, [](int) { return 7; }); }),
      "top_k");
  EXPECT_FALSE(fs::exists(refused));
}

TEST(TraceImport, SglangPerPassCountsGiveMicrobatchIThePassIShares) {
  // Three passes of a dense layer and two MoE layers of four experts; the second pass is an
  // unfilled slot of SGLang's buffer. Pass 0 routes everything to expert 0 (layer 1) and 1
  // (layer 2), pass 2 to experts 2 and 3.
  const std::string path = ::testing::TempDir() + "/per_pass.json";
  std::ofstream(path) << R"({"rank": 0, "logical_count": [
      [[0, 0, 0, 0], [9, 0, 0, 0], [0, 9, 0, 0]],
      [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]],
      [[0, 0, 0, 0], [0, 0, 9, 0], [0, 0, 0, 9]]]})";
  const ImportShape shape{2, 1, 3, 1};
  const std::string out = fresh("per_pass.trace");
  EXPECT_EQ(import_sglang_stats(path, 2, 0, shape, 1, out), 2 * 2);  // 2 steps x 2 layers
  TraceReader reader(out);
  EXPECT_EQ(reader.metadata().steps, 2);
  EXPECT_EQ(reader.metadata().packing["passes"], 2);
  const std::vector<int> expert = {0, 1, 2, 3};  // the record's one expert, in record order
  TraceRecord record;
  for (const int e : expert) {
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(record.counts.expert_totals()[e], 2 * 3 * 2) << "expert " << e;
  }
  // More steps than passes, or a microbatch count no pass fills: named, nothing written.
  const std::string refused = fresh("per_pass_refused.trace");
  EXPECT_EQ(testing::input_error_field([&] { import_sglang_stats(path, 2, 3, shape, 1, refused); }),
            "steps");
  EXPECT_EQ(testing::input_error_field([&] {
              import_sglang_stats(path, 2, 0, ImportShape{2, 1, 3, 3}, 1, refused);
            }),
            "microbatches_per_step");
  // A pass with tokens in one MoE layer and none in another is not an unfilled slot.
  const std::string torn = ::testing::TempDir() + "/per_pass_torn.json";
  std::ofstream(torn) << R"({"logical_count": [[[1, 0], [1, 0]], [[1, 0], [0, 0]]]})";
  EXPECT_EQ(file_error([&] { import_sglang_stats(torn, 1, 0, shape, 1, refused); }),
            torn +
                ": field 'logical_count[1][1]': has no tokens where the pass's other MoE "
                "layers have some");
  EXPECT_FALSE(fs::exists(refused));
}

// One unit per inner vector, over `storage` (which must outlive the units).
TokenUnits units_of(const std::vector<std::vector<ExpertId>>& units,
                    std::vector<ExpertId>* storage) {
  std::vector<std::size_t> begin = {0};
  for (const auto& unit : units) {
    storage->insert(storage->end(), unit.begin(), unit.end());
    begin.push_back(storage->size());
  }
  return TokenUnits::sequences(storage->data(), std::move(begin));
}

// Options are checked before any file is read (the directories here do not exist). A zero
// microbatch count divided by zero and zero ESFT layers indexed an empty list: crashes.
TEST(TraceImport, OptionsOutOfRangeAreNamedBeforeAnyFileIsRead) {
  const std::string none = "/nonexistent/topoep-import";
  const auto esft_field = [&](auto set) {
    ImportShape shape;
    PackingOptions packing;
    int layers = 2, experts = 64, top_k = 6;
    set(shape, packing, layers, experts, top_k);
    return testing::input_error_field(
        [&] { import_esft(none, layers, experts, top_k, shape, packing, none + "/out"); });
  };
  using Shape = ImportShape;
  using Packing = PackingOptions;
  EXPECT_EQ(esft_field([](Shape& s, Packing&, int&, int&, int&) { s.microbatches_per_step = 0; }),
            "microbatches_per_step");
  EXPECT_EQ(esft_field([](Shape&, Packing&, int& layers, int&, int&) { layers = -1; }),
            "num_layers");
  EXPECT_EQ(esft_field([](Shape& s, Packing&, int&, int&, int&) { s.tokens_per_rank = 0; }),
            "tokens_per_rank");
  EXPECT_EQ(esft_field([](Shape& s, Packing&, int&, int&, int&) { s.num_ranks = 0; }), "num_ranks");
  EXPECT_EQ(esft_field([](Shape&, Packing& p, int&, int&, int&) { p.bootstrap_units = -1; }),
            "bootstrap_units");
  EXPECT_EQ(esft_field([](Shape&, Packing& p, int&, int&, int&) { p.unit_tokens = -2; }),
            "unit_tokens");
  EXPECT_EQ(esft_field([](Shape&, Packing&, int&, int&, int& top_k) { top_k = 65; }), "top_k");
  EXPECT_EQ(testing::input_error_field([&] {
              import_token_files("topk-csv", none, 0, 6, ImportShape{}, PackingOptions{}, none);
            }),
            "num_experts");
  const auto sglang_field = [&](int steps, double concentration, int tokens_per_rank) {
    ImportShape shape;
    shape.tokens_per_rank = tokens_per_rank;
    return testing::input_error_field(
        [&] { import_sglang_stats(none, 8, steps, shape, 1, none + "/out", concentration); });
  };
  EXPECT_EQ(sglang_field(-1, 0, 64), "steps");
  EXPECT_EQ(sglang_field(2, -1, 64), "concentration");
  EXPECT_EQ(sglang_field(2, 0, 0), "tokens_per_rank");  // once 58 records of no tokens
  EXPECT_EQ(testing::input_error_field([&] { import_jsonl(none, -1, 8, none); }), "top_k");
}

TEST(UnitPacking, RoundRobinDealsUnitsToRanksAndRandomIsSeeded) {
  // Four units of one top-1 token each; two ranks, one token per rank and microbatch.
  std::vector<ExpertId> storage;
  const TokenUnits units = units_of({{0}, {1}, {2}, {3}}, &storage);
  const UnitPacker round_robin(units, unit_order(4, PackingMethod::kRoundRobin, 0, 1),
                               PackingMethod::kRoundRobin, 1, 2, 1);
  ASSERT_EQ(round_robin.microbatches(), 2);
  EXPECT_EQ(round_robin.pack(units, 0, 4).values(),
            (std::vector<TokenCount>{1, 0, 0, 0, 0, 1, 0, 0}));  // units 0, 1
  EXPECT_EQ(round_robin.pack(units, 1, 4).values(),
            (std::vector<TokenCount>{0, 0, 1, 0, 0, 0, 0, 1}));  // units 2, 3
  EXPECT_EQ(unit_order(4, PackingMethod::kRandom, 0, 7),
            unit_order(4, PackingMethod::kRandom, 0, 7));
  auto shuffled = unit_order(33, PackingMethod::kRandom, 0, 7);
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, unit_order(33, PackingMethod::kContiguous, 0, 7));       // a permutation
  EXPECT_EQ(unit_order(33, PackingMethod::kContiguous, 100, 7).size(), 100u);  // bootstrap
  EXPECT_EQ(testing::input_error_field([] { parse_packing_method("zigzag"); }), "packing");
}

// Runs cross unit boundaries, empty units and, round-robin, the ranks' own streams: every
// microbatch equals packing the concatenated stream token by token (pack_tokens_contiguous),
// and round-robin's equals packing each rank's stream so.
TEST(UnitPacking, MicrobatchesCutTheUnitsStreamAsOneStream) {
  std::vector<ExpertId> storage;
  const TokenUnits units = units_of(
      {{0, 1, 2}, {}, {3, 0}, {1, 1, 1, 1, 2}, {3}, {2, 2}, {0, 3, 3, 1}, {}, {2}}, &storage);
  const std::vector<int> order = {2, 0, 8, 1, 3, 6, 4, 5, 7, 2, 3};  // repeats: a bootstrap
  std::vector<ExpertId> stream;
  for (const int u : order) {
    const ExpertId* first = units.experts + units.unit_begin(u);
    stream.insert(stream.end(), first, first + units.unit_size(u));
  }
  const UnitPacker contiguous(units, order, PackingMethod::kContiguous, 1, 2, 3);
  const auto expected = pack_tokens_contiguous(stream, 1, 4, 2, 3);
  ASSERT_EQ(contiguous.microbatches(), static_cast<int>(expected.size()));
  for (int m = 0; m < contiguous.microbatches(); ++m) {
    EXPECT_EQ(contiguous.pack(units, m, 4).values(), expected[m].values()) << "microbatch " << m;
  }
  const UnitPacker round_robin(units, order, PackingMethod::kRoundRobin, 1, 3, 2);
  std::vector<std::vector<ExpertId>> per_rank(3);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const ExpertId* first = units.experts + units.unit_begin(order[i]);
    per_rank[i % 3].insert(per_rank[i % 3].end(), first, first + units.unit_size(order[i]));
  }
  std::size_t shortest = per_rank[0].size();
  for (const auto& ids : per_rank) shortest = std::min(shortest, ids.size());
  ASSERT_EQ(round_robin.microbatches(), static_cast<int>(shortest / 2));
  for (int m = 0; m < round_robin.microbatches(); ++m) {
    const RoutingCounts packed = round_robin.pack(units, m, 4);
    for (int rank = 0; rank < 3; ++rank) {
      for (ExpertId e = 0; e < 4; ++e) {
        const auto first = per_rank[rank].begin() + 2 * m;
        EXPECT_EQ(packed.at(rank, e), std::count(first, first + 2, e))
            << "microbatch " << m << ", rank " << rank << ", expert " << e;
      }
    }
  }
}

// pack_all() reads the units in the layers' order, not the packing's, and must count what
// pack() counts, layer by layer: orders long enough that each stream passes several of its
// sparse prefix sums, with repeats (a bootstrap), empty units, runs whose last one is short,
// and units cut across ranks and microbatches.
TEST(UnitPacking, PackAllCountsEveryLayersMicrobatchesAsPackDoes) {
  std::vector<ExpertId> storage;
  const TokenUnits sequences = units_of(
      {{0, 1, 2}, {}, {3, 0}, {1, 1, 1, 1, 2}, {3}, {2, 2}, {0, 3, 3, 1}, {}, {2}}, &storage);
  const std::vector<ExpertId> ids = {0, 1, 2, 3, 3, 2, 1, 0, 0, 2, 2, 1, 3};
  const TokenUnits runs = TokenUnits::runs(ids.data(), ids.size(), 3);  // the last holds one
  // A second layer: the same units, other experts.
  std::vector<ExpertId> mirrored(storage.size());
  std::transform(storage.begin(), storage.end(), mirrored.begin(),
                 [](ExpertId e) { return 3 - e; });
  TokenUnits sequences_mirrored = sequences;
  sequences_mirrored.experts = mirrored.data();
  const TokenUnits runs_mirrored = TokenUnits::runs(mirrored.data(), ids.size(), 3);
  for (const auto& layers : {std::vector<TokenUnits>{sequences, sequences_mirrored},
                             std::vector<TokenUnits>{runs, runs_mirrored}}) {
    const int num_units = layers.front().num_units();
    const std::vector<std::vector<int>> orders = {
        unit_order(num_units, PackingMethod::kRandom, 0, 3),
        unit_order(num_units, PackingMethod::kRandom, 157, 5),
        unit_order(num_units, PackingMethod::kContiguous, 211, 6),
        {}};
    for (const std::vector<int>& order : orders) {
      for (const PackingMethod method : {PackingMethod::kContiguous, PackingMethod::kRoundRobin}) {
        const int ranks = 3, tokens = 2, experts = 4;
        const UnitPacker packer(layers.front(), order, method, 1, ranks, tokens);
        const std::size_t matrix = static_cast<std::size_t>(ranks) * experts;
        const std::size_t per_layer = packer.microbatches() * matrix;
        std::vector<TokenCount> all(2 * per_layer, 0);
        packer.pack_all(layers, experts, all.data());
        for (std::size_t l = 0; l < 2; ++l) {
          for (int m = 0; m < packer.microbatches(); ++m) {
            const auto first = all.begin() + l * per_layer + m * matrix;
            EXPECT_EQ(std::vector<TokenCount>(first, first + matrix),
                      packer.pack(layers[l], m, experts).values())
                << (layers.front().run_ids > 0 ? "runs, " : "sequences, ") << order.size()
                << " positions, " << to_string(method) << ", layer " << l << ", microbatch " << m;
          }
        }
        if (order.size() > 100) {
          ASSERT_GT(packer.microbatches(), 16);
        }
      }
    }
  }
  const UnitPacker packer(sequences, {}, PackingMethod::kContiguous, 1, 1, 3);
  std::vector<TokenCount> counts(packer.microbatches() * 3, 0);
  EXPECT_EQ(testing::input_error_field([&] { packer.pack_all({sequences}, 3, counts.data()); }),
            "units");  // expert 3 of 3
}

// An empty order stands for every unit once, in the layer's order, with no vector to hold.
TEST(UnitPacking, AnEmptyOrderPacksAsTheIdentityOrder) {
  std::vector<ExpertId> storage;
  const TokenUnits units =
      units_of({{0, 1, 2}, {}, {3, 0}, {1, 1, 1, 1, 2}, {3}, {2, 2}, {0, 3, 3, 1}}, &storage);
  const std::vector<int> identity = unit_order(7, PackingMethod::kContiguous, 0, 1);
  for (const PackingMethod method : {PackingMethod::kContiguous, PackingMethod::kRoundRobin}) {
    const UnitPacker listed(units, identity, method, 1, 2, 2);
    const UnitPacker implied(units, {}, method, 1, 2, 2);
    ASSERT_EQ(implied.microbatches(), listed.microbatches()) << to_string(method);
    ASSERT_GT(listed.microbatches(), 1) << to_string(method);
    for (int m = 0; m < listed.microbatches(); ++m) {
      EXPECT_EQ(implied.pack(units, m, 4).values(), listed.pack(units, m, 4).values())
          << to_string(method) << ", microbatch " << m;
    }
  }
}

// Runs of a fixed number of ids need no boundaries: the last run holds what is left.
TEST(UnitPacking, RunsCutTheLayerEveryRunIdsAndTheLastHoldsTheRest) {
  const std::vector<ExpertId> ids = {0, 1, 2, 3, 0, 1, 2};
  const TokenUnits runs = TokenUnits::runs(ids.data(), ids.size(), 3);
  ASSERT_EQ(runs.num_units(), 3);
  EXPECT_EQ(runs.unit_begin(2), 6u);
  EXPECT_EQ(runs.unit_size(1), 3u);
  EXPECT_EQ(runs.unit_size(2), 1u);
  EXPECT_EQ(TokenUnits::runs(ids.data(), 0, 3).num_units(), 0);
  std::vector<ExpertId> storage;
  const TokenUnits same = units_of({{0, 1, 2}, {3, 0, 1}, {2}}, &storage);
  EXPECT_FALSE(runs.same_units(same));  // cut alike, but one lists its boundaries
  EXPECT_TRUE(runs.same_units(TokenUnits::runs(storage.data(), storage.size(), 3)));
  EXPECT_FALSE(runs.same_units(TokenUnits::runs(storage.data(), storage.size() - 1, 3)));
  const UnitPacker packer(runs, unit_order(3, PackingMethod::kContiguous, 0, 1),
                          PackingMethod::kContiguous, 1, 1, 7);
  ASSERT_EQ(packer.microbatches(), 1);
  EXPECT_EQ(packer.pack(runs, 0, 4).values(), (std::vector<TokenCount>{2, 2, 2, 1}));
}

TEST(SglangStats, DirichletSharesVaryAroundTheLayerAndTightenWithConcentration) {
  const std::vector<std::int64_t> layer = {100, 300, 600, 0};
  // Mean share of expert 2 over many draws stays near 0.6; spread shrinks as concentration grows.
  for (const double concentration : {10.0, 1000.0}) {
    double sum = 0, squares = 0;
    for (int i = 0; i < 400; ++i) {
      const auto weights = dirichlet_shares(layer, concentration, 1000 + i);
      EXPECT_EQ(weights[3], 0);  // no tokens, no share
      double total = 0;
      for (const auto w : weights) total += static_cast<double>(w);
      const double share = weights[2] / total;
      sum += share;
      squares += share * share;
    }
    const double mean = sum / 400, variance = squares / 400 - mean * mean;
    EXPECT_NEAR(mean, 0.6, 0.03) << concentration;
    // Dirichlet variance: p (1 - p) / (concentration + 1).
    EXPECT_NEAR(variance, 0.24 / (concentration + 1), 0.24 / (concentration + 1) * 0.3)
        << concentration;
  }
  EXPECT_EQ(dirichlet_shares(layer, 10, 5), dirichlet_shares(layer, 10, 5));
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

// Lines of a recorder: 2 steps x 2 microbatches x 3 layers x 4 ranks x 5 experts, counts
// from the key, in record order.
std::vector<std::string> recorded_lines() {
  std::vector<std::string> lines;
  for (int s = 0; s < 2; ++s)
    for (int mb = 0; mb < 2; ++mb)
      for (int l = 0; l < 3; ++l)
        for (int r = 0; r < 4; ++r) {
          std::string counts;
          for (int e = 0; e < 5; ++e) {
            counts += (e ? ", " : "") + std::to_string((s * 7 + mb * 5 + l * 3 + r + e) % 11);
          }
          lines.push_back("{\"step\": " + std::to_string(s) + ", \"microbatch\": " +
                          std::to_string(mb) + ", \"layer\": " + std::to_string(l) +
                          ", \"rank\": " + std::to_string(r) + ", \"counts\": [" + counts + "]}");
        }
  return lines;
}

std::vector<TraceRecord> read_records(const std::string& trace) {
  TraceReader reader(trace);
  std::vector<TraceRecord> records;
  TraceRecord record;
  while (reader.next(record)) records.push_back(record);
  return records;
}

TEST(TraceImport, JsonLinesGiveTheSameRecordsInAnyOrder) {
  std::vector<std::string> lines = recorded_lines();
  std::string ordered;
  for (const std::string& line : lines) ordered += line + "\n";
  const std::string in_order = fresh("in-order.trace");
  EXPECT_EQ(import_jsonl(write_lines("in-order.jsonl", ordered), 2, 2, in_order), 12);
  std::reverse(lines.begin(), lines.end());
  std::rotate(lines.begin(), lines.begin() + 17, lines.end());
  std::string shuffled;
  for (const std::string& line : lines) shuffled += line + "\n\n";  // blank lines are skipped
  const std::string any_order = fresh("any-order.trace");
  EXPECT_EQ(import_jsonl(write_lines("any-order.jsonl", shuffled), 2, 2, any_order), 12);
  const std::vector<TraceRecord> expected = read_records(in_order);
  const std::vector<TraceRecord> got = read_records(any_order);
  ASSERT_EQ(got.size(), 12u);
  ASSERT_EQ(expected.size(), 12u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].counts.values(), expected[i].counts.values()) << "record " << i;
    EXPECT_EQ(got[i].layer, static_cast<int>(i % 3));
  }
  // Record 7 is step 1, microbatch 0, layer 1; rank 2's counts start at (7 + 3 + 2) % 11.
  EXPECT_EQ(got[7].counts.at(2, 0), 1);
}

// A directory of *.jsonl files (one a rank, as each rank records its own) is one input.
TEST(TraceImport, JsonLinesFromADirectoryOfFilesAreOneInput) {
  std::string ordered;
  for (const std::string& line : recorded_lines()) ordered += line + "\n";
  const std::string whole = fresh("whole.trace");
  import_jsonl(write_lines("whole.jsonl", ordered), 2, 2, whole);
  const std::string dir = fresh("by-rank");
  fs::create_directories(dir);
  for (const std::string& line : recorded_lines()) {
    const std::size_t at = line.find("\"rank\": ") + 9;
    std::ofstream(dir + "/rank" + line.substr(at, 1) + ".jsonl", std::ios::app) << line << "\n";
  }
  std::ofstream(dir + "/notes.txt") << "not a .jsonl file: not read\n";
  const std::string split = fresh("split.trace");
  EXPECT_EQ(import_jsonl(dir, 2, 2, split), 12);
  const std::vector<TraceRecord> expected = read_records(whole);
  const std::vector<TraceRecord> got = read_records(split);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].counts.values(), expected[i].counts.values()) << "record " << i;
  }
  const std::string empty = fresh("no-jsonl");
  fs::create_directories(empty);
  try {
    import_jsonl(empty, 2, 2, fresh("empty.trace"));
    ADD_FAILURE() << "a directory with no .jsonl files imported";
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.file(), empty);
  }
}

// The document model's reading: unknown fields skipped whatever they hold, the last value of a
// key given twice.
TEST(TraceImport, JsonLinesSkipUnknownFieldsAndTakeARepeatedKeysLastValue) {
  const std::string path = write_lines(
      "fields.jsonl",
      R"({"note": {"counts": [9, 9], "rank": "x"}, "step": "first", "step": 0, "microbatch": 0,)"
      R"( "layer": 0, "rank": 0, "counts": "later", "counts": [1, 2], "tags": [[3], {"a": null}]})"
      "\n");
  const std::string out = fresh("fields.trace");
  EXPECT_EQ(import_jsonl(path, 1, 1, out), 1);
  const std::vector<TraceRecord> records = read_records(out);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].counts.values(), (std::vector<TokenCount>{1, 2}));
}

// A scratch file holds the counts between reading the lines and writing the trace; it is made
// beside the output and gone when the import ends, whichever way it ends.
// The importers that stream keep the counts (jsonl) or ids (per-token formats) in a scratch
// file beside the output between reading and writing; it is gone when the import ends,
// whichever way it ends, and the output's directory is made if missing, as before.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(TraceImport, StreamingImportsLeaveNothingButTheTraceBesideIt) {
  const std::string dir = fresh("import-beside");
  std::string text;
  for (const std::string& line : recorded_lines()) text += line + "\n";
  import_jsonl(write_lines("beside.jsonl", text), 2, 2, dir + "/made/ok.trace");
  EXPECT_THROW(import_jsonl(write_lines("beside-bad.jsonl", text + "{oops\n"), 2, 2,
                            dir + "/made/bad.trace"),
               FileInputError);
  EXPECT_EQ(names_in(dir + "/made"), std::vector<std::string>{"ok.trace"});

  const std::string csv = fresh("beside-csv");
  fs::create_directories(csv);
  std::ofstream(csv + "/layer0.csv") << "0,1\n2,3\n1,0\n3,2\n";
  std::ofstream(csv + "/layer1.csv") << "1,2\n0,3\n2,1\n3,0\n";
  const ImportShape shape{2, 1, 2, 1};
  EXPECT_EQ(import_token_files("topk-csv", csv, 4, 2, shape, PackingOptions{}, dir + "/csv.trace"),
            2);
  std::ofstream(csv + "/layer2.csv") << "1,2\n0,9\n";
  EXPECT_THROW(
      import_token_files("topk-csv", csv, 4, 2, shape, PackingOptions{}, dir + "/bad.trace"),
      FileInputError);
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"csv.trace", "made"}));
  EXPECT_THROW(import_token_files("topk-csv", dir + "/no-input", 4, 2, shape, PackingOptions{},
                                  dir + "/never/x.trace"),
               FileInputError);
  EXPECT_FALSE(fs::exists(dir + "/never"));  // nothing made for an import that fails
  for (const std::string& name : names_in(::testing::TempDir())) {  // where those scratches went
    EXPECT_EQ(name.find(".ids-"), std::string::npos) << name;
    EXPECT_EQ(name.find(".counts-"), std::string::npos) << name;
    EXPECT_EQ(name.find(".order-"), std::string::npos) << name;
  }
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

// A key given twice is named with where it was first given, in another file of a directory
// too, whether or not the lines are as many as the keys' ranges hold (the repeat is found in the
// table of record slots, or by sorting the lines when some key is missing as well).
TEST(TraceImport, JsonLinesRepeatNamesWhereTheKeyWasFirstGiven) {
  const std::string dir = fresh("repeat-dir");
  fs::create_directories(dir);
  const std::string key0 = R"({"step": 0, "microbatch": 0, "layer": 0, "rank": 0, "counts": [1]})";
  const std::string key2 = R"({"step": 0, "microbatch": 0, "layer": 0, "rank": 2, "counts": [1]})";
  std::ofstream(dir + "/rank0.jsonl") << key0 << "\n" << key2 << "\n";
  std::ofstream(dir + "/rank1.jsonl") << "\n" << key2 << "\n";
  const std::string repeat = "repeats step 0, microbatch 0, layer 0, rank 2 (first given in " +
                             dir + "/rank0.jsonl on line 2)";
  for (const bool missing_too : {false, true}) {
    if (missing_too) std::ofstream(dir + "/rank1.jsonl", std::ios::app) << key2 << "\n";
    try {
      import_jsonl(dir, 1, 1, fresh("repeat.trace"));
      ADD_FAILURE() << "a repeated key imported";
    } catch (const FileInputError& error) {
      EXPECT_EQ(error.file(), dir + "/rank1.jsonl");
      EXPECT_EQ(error.field(), "line 2");
      EXPECT_NE(std::string(error.what()).find(repeat), std::string::npos) << error.what();
    }
  }
}

TEST(TraceImport, JsonLinesErrorsNameTheLine) {
  EXPECT_EQ(
      import_error(
          "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, \"counts\": [1]}\n{oops\n"),
      "line 2");
  EXPECT_EQ(import_error(
                "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": -1, \"counts\": [1]}\n"),
            "line 1 rank");
  EXPECT_EQ(import_error("{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 2000000000, "
                         "\"counts\": [1]}\n"),
            "line 1 rank");  // keys are bounded by 2^30
  EXPECT_EQ(import_error("{\"step\": 0, \"layer\": 0, \"rank\": 0, \"counts\": [1]}\n"),
            "line 1 microbatch");
  EXPECT_EQ(import_error("[0, 0, 0, 0]\n"), "line 1");
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
  // Of several repeats, the first line in the file that repeats an earlier one.
  const std::string b = R"({"step": 0, "microbatch": 0, "layer": 0, "rank": 1, "counts": [1]})";
  const std::string a = R"({"step": 0, "microbatch": 0, "layer": 0, "rank": 0, "counts": [1]})";
  EXPECT_EQ(import_error(b + "\n" + a + "\n" + b + "\n" + a + "\n"), "line 3");
  // As many lines as the keys' ranges hold, one key twice and one missing: the repeat is named.
  const std::string c = R"({"step": 0, "microbatch": 0, "layer": 0, "rank": 2, "counts": [1]})";
  EXPECT_EQ(import_error(a + "\n" + c + "\n" + c + "\n"), "line 3");
  EXPECT_EQ(import_error(c + "\n" + a + "\n" + b + "\n" + a + "\n" + b + "\n" + c + "\n"),
            "line 4");
  for (const char* counts :
       {"[[1]]", "[1.5]", "[18446744073709551615]", "[\"1\"]", "{}", "7", "[]", "[2147483648]"}) {
    EXPECT_EQ(import_error(std::string(R"({"step": 0, "microbatch": 0, "layer": 0, "rank": 0, )") +
                           "\"counts\": " + counts + "}\n"),
              "line 1 counts")
        << counts;
  }
  EXPECT_EQ(import_error(R"({"step": 0, "microbatch": 0, "layer": [0], "rank": 0, "counts": [1]})"
                         "\n"),
            "line 1 layer");
  EXPECT_EQ(import_error("\n\n   \n"), import_error(""));  // blank lines only: no records
  const std::string missing = import_error(
      "{\"step\": 0, \"microbatch\": 0, \"layer\": 0, \"rank\": 0, \"counts\": [1]}\n"
      "{\"step\": 0, \"microbatch\": 0, \"layer\": 1, \"rank\": 1, \"counts\": [1]}\n");
  EXPECT_NE(missing.find("no line for step 0, microbatch 0, layer 0, rank 1"), std::string::npos)
      << missing;
}

}  // namespace
}  // namespace topoep
