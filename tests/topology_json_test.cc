#include "topologies/topology_json.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>

#include "common/file_input_error.h"
#include "tests/input_error_field.h"
#include "topologies/topology_presets.h"
#include "topologies/topology_shape.h"

namespace topoep {
namespace {

using nlohmann::json;

json valid_document() { return topology_to_json(load_topology("h800-4x8")); }

// Parses `document` after `edit`; returns the FileInputError's field, or "" if it parsed.
std::string error_field_after(const std::function<void(json&)>& edit) {
  json document = valid_document();
  edit(document);
  try {
    parse_topology(document.dump(), "edited.json");
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.file(), "edited.json");
    EXPECT_NE(std::string(error.what()).find("edited.json: field '" + error.field() + "'"),
              std::string::npos)
        << error.what();
    return error.field();
  }
  return "";
}

TEST(TopologyPresets, AllPresetsLoadAndRoundTrip) {
  const std::vector<std::string> expected = {"a100-8x8", "b200-8x8", "gb200-nvl72-2x72",
                                             "h100-8x8", "h200-8x8", "h800-4x8"};
  EXPECT_EQ(topology_preset_names(), expected);
  for (const std::string& name : topology_preset_names()) {
    const Topology topology = load_topology(name);
    EXPECT_EQ(topology.name, name);
    const json canonical = topology_to_json(topology);
    EXPECT_EQ(topology_to_json(parse_topology(canonical.dump(), "roundtrip")), canonical) << name;
    EXPECT_FALSE(topology.scale_up.source.empty());
    EXPECT_FALSE(topology.scale_out.source.empty());
    EXPECT_FALSE(topology.gpu.source.empty());
    EXPECT_FALSE(topology.gemm_efficiency.source.empty());
  }
}

TEST(TopologyPresets, PaperClusterMatchesItsPublishedFigures) {
  const Topology topology = load_topology("h800-4x8");
  EXPECT_EQ(topology.num_gpus(), 32);
  EXPECT_EQ(topology.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(topology.scale_up.spec_gb_per_s, 200.0);       // 400 GB/s bidirectional
  EXPECT_DOUBLE_EQ(topology.scale_up.bandwidth_gb_per_s, 160.0);  // achieved one way
  EXPECT_DOUBLE_EQ(topology.scale_out.spec_gb_per_s, 50.0);       // 400 Gb/s NIC
  EXPECT_DOUBLE_EQ(topology.scale_out.bandwidth_gb_per_s, 48.5);  // achieved
  EXPECT_EQ(load_topology("gb200-nvl72-2x72").gpus_per_node, 72);
}

TEST(TopologyJson, AcceptsTotalGpusInsteadOfNodes) {
  const std::string field = error_field_after([](json& d) {
    d.erase("nodes");
    d["total_gpus"] = 32;
  });
  EXPECT_EQ(field, "");
}

TEST(TopologyJson, RejectsMissingField) {
  EXPECT_EQ(error_field_after([](json& d) { d["scale_out"].erase("bandwidth_gb_per_s"); }),
            "scale_out.bandwidth_gb_per_s");
}

TEST(TopologyJson, RejectsUnknownField) {
  EXPECT_EQ(error_field_after([](json& d) { d["scale_up"]["bandwith_gb_per_s"] = 1; }),
            "scale_up.bandwith_gb_per_s");
}

TEST(TopologyJson, AllowsCommentFields) {
  EXPECT_EQ(error_field_after([](json& d) { d["gpu"]["comment"] = "from the datasheet"; }), "");
}

TEST(TopologyJson, RejectsZeroBandwidth) {
  EXPECT_EQ(error_field_after([](json& d) { d["scale_up"]["bandwidth_gb_per_s"] = 0; }),
            "scale_up.bandwidth_gb_per_s");
}

TEST(TopologyJson, RejectsNegativeBandwidth) {
  EXPECT_EQ(error_field_after([](json& d) { d["scale_out"]["spec_gb_per_s"] = -50; }),
            "scale_out.spec_gb_per_s");
}

TEST(TopologyJson, RejectsAchievedBandwidthAboveSpec) {
  EXPECT_EQ(error_field_after([](json& d) { d["scale_up"]["bandwidth_gb_per_s"] = 250; }),
            "scale_up.bandwidth_gb_per_s");
}

TEST(TopologyJson, RejectsNegativeLatency) {
  EXPECT_EQ(error_field_after([](json& d) { d["scale_out"]["latency_us"] = -1; }),
            "scale_out.latency_us");
}

TEST(TopologyJson, RejectsWrongType) {
  EXPECT_EQ(error_field_after([](json& d) { d["nodes"] = "4"; }), "nodes");
  EXPECT_EQ(error_field_after([](json& d) { d["gpus_per_node"] = 8.5; }), "gpus_per_node");
}

TEST(TopologyJson, RejectsZeroNodes) {
  EXPECT_EQ(error_field_after([](json& d) { d["nodes"] = 0; }), "nodes");
}

TEST(TopologyJson, RejectsGpusPerNodeNotDividingTheTotal) {
  EXPECT_EQ(error_field_after([](json& d) {
              d.erase("nodes");
              d["total_gpus"] = 36;
            }),
            "gpus_per_node");
}

TEST(TopologyJson, RejectsNodesDisagreeingWithTotal) {
  EXPECT_EQ(error_field_after([](json& d) { d["total_gpus"] = 64; }), "nodes");
}

TEST(TopologyJson, RejectsMissingNodesAndTotal) {
  EXPECT_EQ(error_field_after([](json& d) { d.erase("nodes"); }), "nodes");
}

// The experts compute at the bf16 peak, which a GPU must have; fp8 may be 0, a GPU without fp8
// tensor cores (A100), never negative.
TEST(TopologyJson, RejectsZeroBf16PeakAndNegativeFp8Peak) {
  EXPECT_EQ(error_field_after([](json& d) { d["gpu"]["peak_tflops"]["bf16"] = 0; }),
            "gpu.peak_tflops.bf16");
  EXPECT_EQ(error_field_after([](json& d) { d["gpu"]["peak_tflops"]["fp8"] = -1; }),
            "gpu.peak_tflops.fp8");
  EXPECT_EQ(error_field_after([](json& d) { d["gpu"]["peak_tflops"]["fp8"] = 0; }), "");
}

TEST(TopologyJson, RejectsEfficiencyOutsideZeroOne) {
  EXPECT_EQ(error_field_after([](json& d) { d["grouped_gemm_efficiency"]["efficiency"][3] = 1.5; }),
            "grouped_gemm_efficiency.efficiency");
}

TEST(TopologyJson, RejectsUnsortedEfficiencyCurve) {
  EXPECT_EQ(
      error_field_after([](json& d) { d["grouped_gemm_efficiency"]["tokens_per_expert"][2] = 1; }),
      "grouped_gemm_efficiency.tokens_per_expert");
}

TEST(TopologyJson, RejectsEfficiencyCurveOfUnequalLengths) {
  EXPECT_EQ(error_field_after([](json& d) { d["grouped_gemm_efficiency"]["efficiency"].erase(0); }),
            "grouped_gemm_efficiency.efficiency");
}

// The attention core's curve is optional (the A100 preset has none) and checked as the GEMM
// curve is, each efficiency column against the sequence lengths.
TEST(TopologyJson, AttentionEfficiencyIsOptionalAndCheckedLikeTheGemmCurve) {
  EXPECT_FALSE(load_topology("h800-4x8").attention_efficiency.empty());
  EXPECT_EQ(error_field_after([](json& d) { d.erase("attention_efficiency"); }), "");
  EXPECT_FALSE(topology_to_json(load_topology("a100-8x8")).contains("attention_efficiency"));
  EXPECT_EQ(error_field_after([](json& d) { d["attention_efficiency"]["backward"][1] = 0; }),
            "attention_efficiency.backward");
  EXPECT_EQ(error_field_after([](json& d) { d["attention_efficiency"]["forward"][0] = 1.2; }),
            "attention_efficiency.forward");
  EXPECT_EQ(
      error_field_after([](json& d) { d["attention_efficiency"]["sequence_length"][3] = 100; }),
      "attention_efficiency.sequence_length");
  EXPECT_EQ(error_field_after([](json& d) { d["attention_efficiency"]["forward"].erase(0); }),
            "attention_efficiency.forward");
  EXPECT_EQ(error_field_after([](json& d) {
              d["attention_efficiency"]["sequence_length"] = json::array();
              d["attention_efficiency"]["forward"] = json::array();
              d["attention_efficiency"]["backward"] = json::array();
            }),
            "attention_efficiency.sequence_length");
  EXPECT_EQ(error_field_after([](json& d) { d["attention_efficiency"].erase("source"); }),
            "attention_efficiency.source");
}

TEST(TopologyJson, RejectsSectionThatIsNotAnObject) {
  EXPECT_EQ(error_field_after([](json& d) { d["gpu"] = 3; }), "gpu");
}

TEST(TopologyJson, RejectsInvalidJsonNamingTheFile) {
  try {
    parse_topology("{\"name\": ", "broken.json");
    FAIL() << "expected FileInputError";
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.file(), "broken.json");
    EXPECT_NE(std::string(error.what()).find("invalid JSON"), std::string::npos);
  }
}

TEST(TopologyFiles, LoadsAFileAndNamesItInErrors) {
  const std::string path = ::testing::TempDir() + "/topology_test.json";
  json document = valid_document();
  { std::ofstream(path) << document.dump(); }
  EXPECT_EQ(load_topology(path).name, "h800-4x8");
  document["scale_up"]["latency_us"] = "fast";
  { std::ofstream(path) << document.dump(); }
  try {
    load_topology(path);
    FAIL() << "expected FileInputError";
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.file(), path);
    EXPECT_EQ(error.field(), "scale_up.latency_us");
  }
  std::remove(path.c_str());
}

TEST(TopologyFiles, RejectsUnknownPresetListingTheKnownOnes) {
  try {
    load_topology("h900-1x1");
    FAIL() << "expected FileInputError";
  } catch (const FileInputError& error) {
    EXPECT_NE(std::string(error.what()).find("h800-4x8"), std::string::npos) << error.what();
  }
}

TEST(TopologyShape, ReshapedKeepsThePerGpuLinksAndRenamesTheShape) {
  const Topology base = load_topology("h800-4x8");
  const Topology shaped = reshaped(base, 16, 0);
  EXPECT_EQ(shaped.name, "h800-16x8");
  EXPECT_EQ(shaped.nodes, 16);
  EXPECT_EQ(shaped.gpus_per_node, 8);
  EXPECT_EQ(shaped.num_gpus(), 128);
  EXPECT_EQ(shaped.origin, base.origin);  // errors still name the preset or file
  EXPECT_EQ(shaped.scale_up.bandwidth_gb_per_s, base.scale_up.bandwidth_gb_per_s);
  EXPECT_EQ(shaped.scale_out.latency_us, base.scale_out.latency_us);
  EXPECT_EQ(shaped.gpu.peak_tflops_bf16, base.gpu.peak_tflops_bf16);
  EXPECT_EQ(shaped.gemm_efficiency.efficiency, base.gemm_efficiency.efficiency);
  EXPECT_EQ(shaped.description.rfind("h800-4x8 reshaped from 4x8 to 16x8", 0), 0u)
      << shaped.description;
  // The canonical file form of a reshape reads back as the same cluster.
  const Topology read_back = parse_topology(topology_to_json(shaped).dump(), "shaped.json");
  EXPECT_EQ(read_back.name, "h800-16x8");
  EXPECT_EQ(read_back.num_gpus(), 128);
}

TEST(TopologyShape, ReshapedChangesTheScaleUpDomain) {
  const Topology shaped = reshaped(load_topology("gb200-nvl72-2x72"), 1, 36);
  EXPECT_EQ(shaped.name, "gb200-nvl72-1x36");
  EXPECT_EQ(shaped.view().gpus_per_node, 36);
}

TEST(TopologyShape, ZeroKeepsTheBaseShapeAndName) {
  const Topology base = load_topology("h100-8x8");
  const Topology same = reshaped(base, 0, 0);
  EXPECT_EQ(same.name, "h100-8x8");
  EXPECT_EQ(same.description, base.description);
  EXPECT_EQ(reshaped(base, 8, 8).name, "h100-8x8");
}

TEST(TopologyShape, ANameWithoutItsShapeGainsTheNewOne) {
  Topology base = load_topology("h800-4x8");
  base.name = "my-cluster";
  EXPECT_EQ(reshaped(base, 2, 0).name, "my-cluster-2x8");
  base.name = "h800-2x8";  // a shape, but not this topology's
  EXPECT_EQ(reshaped(base, 2, 0).name, "h800-2x8-2x8");
}

TEST(TopologyShape, RefusesNegativeCountsAndTooManyGpusNamingTheField) {
  const Topology base = load_topology("h800-4x8");
  using testing::input_error_field;
  EXPECT_EQ(input_error_field([&] { reshaped(base, -1, 0); }), "nodes");
  EXPECT_EQ(input_error_field([&] { reshaped(base, 0, -8); }), "gpus_per_node");
  EXPECT_EQ(input_error_field([&] { reshaped(base, kMaxTopologyGpus, 2); }), "nodes");
  EXPECT_EQ(input_error_field([&] { reshaped(base, kMaxTopologyGpus / 8, 0); }), "<no error>");
}

}  // namespace
}  // namespace topoep
