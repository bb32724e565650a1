// The trace format: write, stream back, and reject damaged or inconsistent traces with the file
// and record named; unfinished writes leave nothing behind.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/file_input_error.h"
#include "solver/input_error.h"
#include "traces/synthetic_routing.h"
#include "traces/trace_reader.h"
#include "traces/trace_slice.h"
#include "traces/trace_writer.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

TraceMetadata small_metadata() {
  TraceMetadata m;
  m.model = "test";
  m.num_experts = 16;
  m.top_k = 2;
  m.num_ranks = 8;
  m.gpus_per_node = 4;
  m.num_layers = 3;
  m.microbatches = 2;
  m.steps = 2;
  m.tokens_per_rank = 32;
  m.source = "synthetic";
  m.records_per_chunk = 5;  // records span chunks unevenly
  return m;
}

RoutingCounts record(int index) {
  SyntheticRoutingSpec spec;
  spec.num_ranks = 8;
  spec.num_experts = 16;
  spec.tokens_per_rank = 32;
  spec.top_k = 2;
  spec.seed = 100 + index;
  return generate_routing(spec);
}

std::string fresh_path(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  fs::remove_all(path);
  return path;
}

std::string write_small_trace(const std::string& name) {
  const std::string path = fresh_path(name);
  TraceWriter writer(path, small_metadata());
  for (int i = 0; i < 12; ++i) writer.add(record(i));
  writer.finish();
  return path;
}

TEST(TraceFormat, WritesAndStreamsBackEveryRecordInOrder) {
  const std::string path = write_small_trace("roundtrip.trace");
  TraceReader reader(path);
  EXPECT_EQ(reader.metadata().dtype, "U16");  // 32 tokens x top-2 fits in 16 bits
  TraceRecord r;
  int i = 0;
  while (reader.next(r)) {
    EXPECT_EQ(r.step, i / 6);
    EXPECT_EQ(r.microbatch, i / 3 % 2);
    EXPECT_EQ(r.layer, i % 3);
    EXPECT_EQ(r.counts.values(), record(i).values()) << "record " << i;
    ++i;
  }
  EXPECT_EQ(i, 12);
  EXPECT_EQ(validate_trace(path), 12);
  EXPECT_TRUE(fs::exists(path + "/chunk-000002.safetensors"));  // 5 + 5 + 2 records
}

TEST(TraceFormat, UsesThirtyTwoBitCountsWhenSixteenMightOverflow) {
  TraceMetadata m = small_metadata();
  m.tokens_per_rank = 0;  // undeclared: rows may differ, no U16 guarantee
  const std::string path = fresh_path("wide.trace");
  TraceWriter writer(path, m);
  RoutingCounts big(8, 16);
  big.set(0, 0, 100000);
  for (int i = 0; i < 12; ++i) writer.add(i == 0 ? big : record(i));
  writer.finish();
  TraceReader reader(path);
  EXPECT_EQ(reader.metadata().dtype, "I32");
  TraceRecord r;
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.counts.at(0, 0), 100000);
}

TEST(TraceFormat, RejectsCountsBeyondTheTypeInsteadOfWrapping) {
  TraceMetadata m = small_metadata();
  m.tokens_per_rank = 0;
  m.dtype = "U16";
  const std::string path = fresh_path("overflow.trace");
  TraceWriter writer(path, m);
  RoutingCounts big(8, 16);
  big.set(3, 5, 70000);
  EXPECT_THROW(writer.add(big), InputError);
}

TEST(TraceFormat, RejectsRowsThatDisagreeWithTokensTimesTopK) {
  const std::string path = fresh_path("rows.trace");
  TraceWriter writer(path, small_metadata());
  RoutingCounts wrong = record(0);
  wrong.set(2, 0, wrong.at(2, 0) + 1);
  try {
    writer.add(wrong);
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(error.field(), "record 0 counts[2]");
  }
}

TEST(TraceFormat, AnUnfinishedWriteLeavesNothing) {
  const std::string path = fresh_path("unfinished.trace");
  {
    TraceWriter writer(path, small_metadata());
    for (int i = 0; i < 7; ++i) writer.add(record(i));
    EXPECT_THROW(writer.finish(), InputError);  // 7 of 12 records
  }
  EXPECT_FALSE(fs::exists(path));
  for (const auto& entry : fs::directory_iterator(::testing::TempDir())) {
    EXPECT_EQ(entry.path().filename().string().find("unfinished.trace.tmp"), std::string::npos);
  }
}

// 10^6 steps of 1,024 x 1,024 counts: about 2 TB, more than any test machine has free. Refused
// before a record is written, not when the disk fills, and nothing is left behind.
TEST(TraceFormat, RefusesATraceLargerThanTheFreeSpaceBeforeWritingIt) {
  const std::string path = fresh_path("huge.trace");
  TraceMetadata m = small_metadata();
  m.num_ranks = m.num_experts = 1024;
  m.gpus_per_node = 8;
  m.steps = 1000000;
  m.tokens_per_rank = 0;
  try {
    TraceWriter writer(path, m);
    FAIL() << "no error";
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.file(), path);
    EXPECT_NE(std::string(error.what()).find("records need"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(fs::exists(path));
  for (const auto& entry : fs::directory_iterator(::testing::TempDir())) {
    EXPECT_EQ(entry.path().filename().string().find("huge.trace.tmp"), std::string::npos);
  }
}

TEST(TraceSlice, KeepsTheChosenStepsAndLayersRenumbered) {
  const std::string path = write_small_trace("slice_source.trace");  // 2 steps x 2 mb x 3 layers
  const std::string out = fresh_path("slice.trace");
  TraceSlice slice;
  parse_step_range("1:", &slice);
  slice.layers = {0, 2};
  EXPECT_EQ(slice_trace(path, slice, out), 4);
  TraceReader reader(out);
  EXPECT_EQ(reader.metadata().steps, 1);
  EXPECT_EQ(reader.metadata().num_layers, 2);
  TraceRecord r;
  const int kept[] = {6, 8, 9, 11};  // step 1: records 6..11, layers 0 and 2
  for (const int source : kept) {
    ASSERT_TRUE(reader.next(r));
    EXPECT_EQ(r.step, 0);
    EXPECT_EQ(r.counts.values(), record(source).values()) << "source record " << source;
  }
  EXPECT_FALSE(reader.next(r));
  slice.layers = {2, 1};
  EXPECT_THROW(slice_trace(path, slice, fresh_path("bad_slice.trace")), InputError);
  EXPECT_THROW(parse_step_range("3", &slice), InputError);
}

TEST(TraceFormat, RefusesToOverwriteAnExistingTrace) {
  const std::string path = write_small_trace("exists.trace");
  EXPECT_THROW(TraceWriter(path, small_metadata()), FileInputError);
}

// A trace written must read back: metadata the reader would refuse is refused before anything
// is written, naming the field.
TEST(TraceFormat, WriterRefusesMetadataTheReaderWouldRefuse) {
  auto writer_error = [](const std::function<void(TraceMetadata&)>& change) {
    const std::string path = fresh_path("refused.trace");
    TraceMetadata m = small_metadata();
    change(m);
    try {
      TraceWriter writer(path, m);
    } catch (const InputError& error) {
      EXPECT_FALSE(fs::exists(path));
      return std::string(error.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(writer_error([](TraceMetadata& m) { m.num_layers = TraceLimits::kLayers + 1; }),
            "metadata.num_layers: must be from 1 to 65536, got 65537");
  EXPECT_EQ(writer_error([](TraceMetadata& m) { m.gpus_per_node = 3; }),
            "metadata.gpus_per_node: 3 does not divide 8 ranks");
  EXPECT_EQ(writer_error([](TraceMetadata& m) { m.top_k = 17; }),
            "metadata.top_k: must be from 1 to 16, got 17");
  EXPECT_EQ(writer_error([](TraceMetadata& m) { m.dtype = "F32"; }),
            "metadata.dtype: must be \"U16\" or \"I32\", got \"F32\"");
  EXPECT_EQ(writer_error([](TraceMetadata& m) { m.steps = 0; }),
            "metadata.steps: must be from 1 to 1073741824, got 0");
}

// Damage a copy of a good trace, then expect the reader to name the file (and field).
std::string damaged(const std::string& name,
                    const std::function<void(const std::string&)>& damage) {
  const std::string path = write_small_trace(name);
  damage(path);
  return path;
}

std::string reader_error(const std::string& path) {
  try {
    validate_trace(path);
  } catch (const FileInputError& error) {
    return error.what();
  }
  return "<no error>";
}

TEST(TraceFormat, NamesATruncatedChunk) {
  const std::string path = damaged("truncated.trace", [](const std::string& p) {
    fs::resize_file(p + "/chunk-000001.safetensors",
                    fs::file_size(p + "/chunk-000001.safetensors") - 10);
  });
  EXPECT_NE(reader_error(path).find("chunk-000001.safetensors"), std::string::npos)
      << reader_error(path);
  EXPECT_NE(reader_error(path).find("truncated"), std::string::npos) << reader_error(path);
}

TEST(TraceFormat, NamesAWrongHeaderLength) {
  const std::string path = damaged("header.trace", [](const std::string& p) {
    std::fstream file(p + "/chunk-000000.safetensors",
                      std::ios::in | std::ios::out | std::ios::binary);
    const char huge[8] = {'\xff', '\xff', '\xff', '\x7f', 0, 0, 0, 0};
    file.write(huge, 8);
  });
  EXPECT_NE(reader_error(path).find("chunk-000000.safetensors: header length"), std::string::npos)
      << reader_error(path);
}

// Extents whose product overflows 64 bits are refused, not multiplied (undefined behaviour).
TEST(TraceFormat, NamesATensorShapeTooLargeToMultiply) {
  const std::string path = damaged("shape.trace", [](const std::string& p) {
    const std::string header =
        R"({"counts":{"dtype":"U16","shape":[4294967296,4294967296],"data_offsets":[0,0]}})";
    std::ofstream file(p + "/chunk-000000.safetensors", std::ios::binary | std::ios::trunc);
    const std::uint64_t length = header.size();
    for (int b = 0; b < 8; ++b) file.put(static_cast<char>(length >> (8 * b) & 0xff));
    file << header;
  });
  EXPECT_NE(reader_error(path).find("chunk-000000.safetensors: field 'counts': bad tensor entry: "
                                    "shape has more than 2^40 elements"),
            std::string::npos)
      << reader_error(path);
}

TEST(TraceFormat, NamesBadIndexJson) {
  const std::string path = damaged("json.trace", [](const std::string& p) {
    std::ofstream(p + "/index.json") << "{\"format\": \"topoep-trace\", ";
  });
  EXPECT_NE(reader_error(path).find("index.json: invalid JSON"), std::string::npos)
      << reader_error(path);
}

// Recorded routing data handed over where a trace belongs: the error says it is no trace and
// names the import command that converts what it looks like.
TEST(TraceFormat, RoutingDataThatIsNoTraceNamesTheImporterThatFits) {
  const std::string root = ::testing::TempDir() + "/not_traces";
  fs::remove_all(root);
  const auto directory_with = [&](const std::string& name, const std::string& file,
                                  const std::string& text) {
    const std::string dir = root + "/" + name;
    fs::create_directories(dir);
    std::ofstream(dir + "/" + file) << text;
    return dir;
  };
  const std::pair<std::string, std::string> cases[] = {
      {directory_with("esft", "expert_weights_1.txt", "3\t5\t\t0.5\t0.5\n"), "--format esft "},
      {directory_with("flame", "layer2.csv", "layer_id,token_id,expert_0,expert_1\n2,0,0.9,0\n"),
       "--format flame-csv "},
      {directory_with("topk", "layer0.csv", "3,5\n1,2\n"), "--format topk-csv "},
      {directory_with("npy", "layer0.npy", "\x93NUMPY"), "--format topk-npy "},
      {directory_with("jsonl", "rank0.jsonl", "{}\n"), "--format jsonl "},
  };
  for (const auto& [dir, expected] : cases) {
    const std::string error = reader_error(dir);
    EXPECT_NE(error.find(dir + ": not a TopoEP trace: the directory has no index.json"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("topoep trace import " + expected + "--input " + dir), std::string::npos)
        << error;
  }
  // A file: SGLang's statistics are one JSON file.
  const std::string stats = root + "/prefill.json";
  std::ofstream(stats) << "{\"logical_count\": [[1, 2]]}";
  EXPECT_NE(reader_error(stats).find("--format sglang-stats --input " + stats), std::string::npos)
      << reader_error(stats);
  // Nothing recognised: every format is listed; nothing there: said so.
  const std::string empty = root + "/empty";
  fs::create_directories(empty);
  EXPECT_NE(
      reader_error(empty).find("--format esft|flame-csv|topk-csv|topk-npy|sglang-stats|jsonl"),
      std::string::npos)
      << reader_error(empty);
  EXPECT_NE(reader_error(root + "/missing").find("missing: no such file or directory"),
            std::string::npos)
      << reader_error(root + "/missing");
  fs::remove_all(root);
}

TEST(TraceFormat, NamesShapesThatDisagreeWithTheMetadata) {
  const std::string path = damaged("shape.trace", [](const std::string& p) {
    std::ifstream in(p + "/index.json");
    nlohmann::json index = nlohmann::json::parse(in);
    index["metadata"]["num_experts"] = 15;
    std::ofstream(p + "/index.json") << index.dump();
  });
  EXPECT_NE(reader_error(path).find("chunk-000000.safetensors: field 'counts'"), std::string::npos)
      << reader_error(path);
}

TEST(TraceFormat, NamesMissingRecords) {
  const std::string path = damaged("missing.trace", [](const std::string& p) {
    std::ifstream in(p + "/index.json");
    nlohmann::json index = nlohmann::json::parse(in);
    index["metadata"]["steps"] = 3;
    std::ofstream(p + "/index.json") << index.dump();
  });
  EXPECT_NE(reader_error(path).find("field 'chunks'"), std::string::npos) << reader_error(path);
}

TEST(TraceFormat, NamesTheRecordWhoseRowSumIsWrong) {
  const std::string path = damaged("sums.trace", [](const std::string& p) {
    std::ifstream in(p + "/index.json");
    nlohmann::json index = nlohmann::json::parse(in);
    index["metadata"]["tokens_per_rank"] = 31;
    std::ofstream(p + "/index.json") << index.dump();
  });
  EXPECT_NE(reader_error(path).find("record 0 counts[0]"), std::string::npos) << reader_error(path);
}

TEST(TraceFormat, NamesTheCellOfANegativeThirtyTwoBitCount) {
  TraceMetadata m = small_metadata();
  m.tokens_per_rank = 0;
  const std::string path = fresh_path("negative.trace");
  TraceWriter writer(path, m);
  RoutingCounts big(8, 16);
  big.set(2, 5, 100000);  // 0x000186a0: forces I32 and marks the cell in the file
  for (int i = 0; i < 12; ++i) writer.add(i == 0 ? big : record(i));
  writer.finish();
  const std::string chunk = path + "/chunk-000000.safetensors";
  std::string bytes;
  {
    std::ifstream in(chunk, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::size_t at = bytes.find(std::string("\xa0\x86\x01\x00", 4));
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 4, std::string(4, '\xff'));  // -1
  std::ofstream(chunk, std::ios::binary) << bytes;
  const std::string error = reader_error(path);
  EXPECT_NE(error.find("chunk-000000.safetensors: field 'record 0 counts[2][5]'"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("is negative (-1)"), std::string::npos) << error;
}

}  // namespace
}  // namespace topoep
