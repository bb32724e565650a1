#include "topologies/topology_json.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>

#include "common/file_input_error.h"
#include "topologies/topology_presets.h"

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
  const std::vector<std::string> expected = {"gb200-nvl72-2x72", "h100-8x8", "h200-8x8",
                                             "h800-4x8"};
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

TEST(TopologyJson, RejectsZeroPeakCompute) {
  EXPECT_EQ(error_field_after([](json& d) { d["gpu"]["peak_tflops"]["fp8"] = 0; }),
            "gpu.peak_tflops.fp8");
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

}  // namespace
}  // namespace topoep
