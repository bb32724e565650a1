// The harness's pure parts: plan segments (the transfer layout both ends derive from a plan),
// the expert FFN's weight round trip, the least-squares fits behind `topoep calibrate`
// (recovering known constants from synthetic measurements), and `topoep compare`.

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/file_input_error.h"
#include "harness/calibration.h"
#include "harness/expert_ffn.h"
#include "harness/layer_executor.h"
#include "tests/sim_fixtures.h"
#include "traces/splitmix64.h"

namespace topoep {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) {
  const std::string path = (fs::path(testing::TempDir()) / name).string();
  fs::remove_all(path);
  fs::create_directories(path);
  return path;
}

TEST(PlanSegments, SplitEachSourceExpertPairInRouteOrder) {
  Plan plan;
  plan.num_ranks = 2;
  plan.num_experts = 2;
  plan.slots_per_rank = 1;
  plan.replica_expert = {kNoExpert, 0};
  plan.routes = {{0, 0, 0, 5}, {0, 0, 1, 3}, {0, 1, 1, 2}, {1, 0, 1, 4}};
  const std::vector<Segment> segments = plan_segments(plan);
  ASSERT_EQ(segments.size(), 4u);
  EXPECT_EQ(segments[1].first, 5);  // assignments 5..7 of (0, expert 0) go to rank 1
  EXPECT_EQ(segments[1].count, 3);
  EXPECT_EQ(segments[2].first, 0);  // a new (src, expert) pair starts at 0
  EXPECT_EQ(segments[3].first, 0);
}

TEST(ExpertFfn, WeightsSurviveTheWireAndGiveTheSameOutputs) {
  const ExpertWeights w = make_expert_weights(3, 16, 8, 7);
  const std::vector<float> packed = pack_weights(w);
  const ExpertWeights back = unpack_weights(packed.data(), 16, 8);
  RowMatrix x(4, 16);
  for (int t = 0; t < 4; ++t) token_activation(7, 0, 1, 3, t, 16, x.row(t).data());
  EXPECT_EQ(expert_forward(w, x), expert_forward(back, x));
  EXPECT_NE(make_expert_weights(4, 16, 8, 7).gate, w.gate);  // another expert, other weights
}

TEST(Calibration, RecoversLinkLatencyAndBandwidthFromNoisyTransfers) {
  // 4.2 us + bytes / 37.5 GB/s, with +-1% multiplicative noise.
  SplitMix64 random(11);
  std::vector<std::pair<double, double>> samples;
  for (double bytes = 1024; bytes <= 64e6; bytes *= 2) {
    const double time = 4.2 + bytes / 37.5e3;
    samples.push_back({bytes, time * (1 + 0.02 * (random.uniform_open() - 0.5))});
  }
  const LinkFit fit = fit_link(samples);
  EXPECT_NEAR(fit.bandwidth_gb_per_s, 37.5, 0.4);
  EXPECT_NEAR(fit.latency_us, 4.2, 0.5);
}

// Noise can give the free fit a negative latency. The fit is then the best line with none, not
// the free fit's slope with its intercept dropped, which would miss every sample by that much.
TEST(Calibration, ANegativeLatencyRefitsTheBandwidthThroughTheOrigin) {
  const std::vector<std::pair<double, double>> samples = {{1e5, 0.5}, {1e6, 9.5}, {1e7, 99.5}};
  // The least squares of relative residuals through the origin: us per byte =
  // sum(bytes / time) / sum((bytes / time)^2).
  double sum = 0, sum_squares = 0;
  for (const auto& [bytes, time] : samples) {
    sum += bytes / time;
    sum_squares += (bytes / time) * (bytes / time);
  }
  const LinkFit fit = fit_link(samples);  // the free fit: -0.5 us + bytes / 100 GB/s
  EXPECT_EQ(fit.latency_us, 0.0);
  EXPECT_NEAR(fit.bandwidth_gb_per_s, sum_squares / sum / 1000, 1e-9);
  EXPECT_GT(fit.bandwidth_gb_per_s, 100.0);
  double squared_error = 0;
  for (const auto& [bytes, time] : samples) {
    const double miss = bytes / (fit.bandwidth_gb_per_s * 1000) - time;
    squared_error += miss * miss;
  }
  EXPECT_NEAR(fit.rms_residual_us, std::sqrt(squared_error / 3), 1e-9);
}

// Timing noise is a share of each transfer's time, so the largest transfers' noise is larger
// than the smallest ones' whole latency. Weighing each transfer by 1 / its time keeps the
// small transfers' say: over many noisy runs of the harness's sizes (1 KB to 4 MB, x4), the
// latency and the bandwidth both come out closer than an unweighted fit gets them.
TEST(Calibration, FitsRelativeResidualsSoTheLatencyIsNotLostInLargeTransfersNoise) {
  SplitMix64 random(5);
  const double alpha = 9.6, bytes_per_us = 48.5e3;  // the h800 preset's IB
  double weighted_alpha = 0, plain_alpha = 0, weighted_bandwidth = 0, plain_bandwidth = 0;
  for (int run = 0; run < 400; ++run) {
    std::vector<std::pair<double, double>> samples;
    Eigen::MatrixXd a(7, 2);
    Eigen::VectorXd b(7);
    for (int i = 0; i < 7; ++i) {
      const double bytes = 1024.0 * (1 << (2 * i));
      const double time =
          (alpha + bytes / bytes_per_us) * (1 + 0.06 * (random.uniform_open() - 0.5));
      samples.push_back({bytes, time});
      a(i, 0) = 1;
      a(i, 1) = bytes;
      b(i) = time;
    }
    const LinkFit fit = fit_link(samples);
    const Eigen::Vector2d plain = a.colPivHouseholderQr().solve(b);
    weighted_alpha += std::abs(fit.latency_us - alpha);
    plain_alpha += std::abs(std::max(0.0, plain(0)) - alpha);
    weighted_bandwidth += std::abs(fit.bandwidth_gb_per_s * 1e3 / bytes_per_us - 1);
    plain_bandwidth += std::abs(1 / plain(1) / bytes_per_us - 1);
  }
  EXPECT_LT(weighted_alpha, 0.8 * plain_alpha);
  EXPECT_LT(weighted_bandwidth, plain_bandwidth);
}

// A base that passes the topology file's checks: 1000 TFLOP/s bf16, NVLink spec 400 GB/s and
// IB spec 50 GB/s (above what the tests below measure).
Topology calibration_base() {
  Topology base = round_topology(2, 2);
  base.scale_up.spec_gb_per_s = 400;
  base.scale_out.spec_gb_per_s = 50;
  base.gpu.name = "test GPU";
  base.gpu.hbm_capacity_gb = 80;
  return base;
}

TEST(Calibration, RecoversTheGemmEfficiencyCurveAndWritesAValidTopology) {
  const std::string dir = temp_dir("calibration");
  const Topology base = calibration_base();
  std::ofstream links(dir + "/link_samples.csv");
  links << "link,bytes,time_us\n";
  for (double bytes = 1e3; bytes <= 1e8; bytes *= 10) {
    links << "nvlink," << bytes << "," << 2.5 + bytes / 300e3 << "\n";
    links << "ib," << bytes << "," << 8.0 + bytes / 40e3 << "\n";
  }
  links.close();
  std::ofstream gemms(dir + "/gemm_samples.csv");
  gemms << "tokens,flop,time_us\n";
  for (int tokens : {1, 8, 64, 512, 4096}) {
    const double efficiency = std::min(0.7, 0.7 * tokens / 300.0);
    const double flop = 6.0 * 4096 * 1024 * tokens;
    for (int repeat = 0; repeat < 3; ++repeat) {
      gemms << tokens << "," << flop << "," << flop / (1000 * 1e6 * efficiency) << "\n";
    }
  }
  gemms.close();
  const Topology t = calibrate_topology(base, dir);
  // The CSV holds six significant digits: the fits are exact to about that.
  EXPECT_NEAR(t.scale_up.bandwidth_gb_per_s, 300.0, 1e-3);
  EXPECT_NEAR(t.scale_up.latency_us, 2.5, 1e-4);
  EXPECT_NEAR(t.scale_out.bandwidth_gb_per_s, 40.0, 1e-3);
  EXPECT_NEAR(t.scale_out.latency_us, 8.0, 1e-4);
  ASSERT_EQ(t.gemm_efficiency.tokens_per_expert.size(), 5u);
  EXPECT_NEAR(t.gemm_efficiency.efficiency[0], 0.7 / 300, 1e-7);
  EXPECT_NEAR(t.gemm_efficiency.efficiency[4], 0.7, 1e-5);
  EXPECT_NE(t.scale_out.source.find("calibrated"), std::string::npos);
}

TEST(Calibration, BadMeasurementsNameTheFileAndColumn) {
  const std::string dir = temp_dir("calibration_bad");
  std::ofstream(dir + "/link_samples.csv") << "link,bytes,time_us\nnvlink,1000,abc\nnvlink,2,3\n";
  std::ofstream(dir + "/gemm_samples.csv") << "tokens,flop,time_us\n";
  try {
    calibrate_topology(round_topology(2, 2), dir);
    FAIL() << "no error";
  } catch (const FileInputError& error) {
    EXPECT_EQ(error.file(), dir + "/link_samples.csv:2");
    EXPECT_EQ(error.field(), "time_us");
  }
}

// What calibrating calibration_base() from the files in `dir` throws, or "<no error>".
std::string calibration_error_in(const std::string& dir) {
  try {
    calibrate_topology(calibration_base(), dir);
  } catch (const FileInputError& error) {
    return error.what();
  }
  return "<no error>";
}

std::string calibration_error(const std::string& dir, const std::string& links,
                              const std::string& gemms) {
  std::ofstream(dir + "/link_samples.csv") << "link,bytes,time_us\n" << links;
  std::ofstream(dir + "/gemm_samples.csv") << "tokens,flop,time_us\n" << gemms;
  return calibration_error_in(dir);
}

// calibrate writes what it returns: a value it cannot fit from, or a fit that the base's
// hardware could not reach, is an error, never a topology file that does not load.
TEST(Calibration, RefusesMeasurementsItCannotTurnIntoAValidTopology) {
  const std::string dir = temp_dir("calibration_refused");
  const std::string links = "nvlink,1000,4\nnvlink,100000,5\nib,1000,10\nib,100000,14\n";
  const std::string gemms = "1,1e9,10\n2,2e9,10\n";
  EXPECT_EQ(calibration_error(dir, links, gemms), "<no error>");
  EXPECT_EQ(calibration_error(dir, "nvlink,1000,4\nnvlink,-2000,5\n", gemms),
            dir + "/link_samples.csv:3: field 'bytes': must be above 0, got -2000");
  EXPECT_EQ(calibration_error(dir, links, "1,1e9,10\n2,2e9,0\n"),
            dir + "/gemm_samples.csv:3: field 'time_us': must be above 0, got 0");
  EXPECT_EQ(calibration_error(dir, links, "-4,1e9,10\n"),
            dir + "/gemm_samples.csv:2: field 'tokens': must be above 0, got -4");
  // Transfers of one size cannot tell latency from bandwidth.
  EXPECT_EQ(calibration_error(dir, "nvlink,1000,4\nnvlink,1000,5\nib,1000,10\nib,1e5,14\n", gemms),
            dir +
                "/link_samples.csv: field 'nvlink': needs transfers of at least two sizes to "
                "separate latency from bandwidth; its 2 sample(s) all move 1000 bytes");
  // One token count would make the whole curve flat at its efficiency.
  EXPECT_EQ(calibration_error(dir, links, "8,1e9,10\n8,1e9,12\n"),
            dir +
                "/gemm_samples.csv: field 'tokens': needs timings at two token counts or more "
                "to fit a curve; all 2 are at 8 tokens");
  // 1e11 bytes in 10 us is 10,000 GB/s: not the base's NVLink.
  const std::string too_fast = calibration_error(dir, "nvlink,1e3,4\nnvlink,1e11,10\n", gemms);
  EXPECT_NE(too_fast.find("field 'nvlink': the fitted bandwidth"), std::string::npos) << too_fast;
  EXPECT_NE(too_fast.find("exceeds the spec"), std::string::npos) << too_fast;
  // 1e15 FLOP in 1 us is 1e9 TFLOP/s: above the base GPU's peak.
  const std::string beyond_peak = calibration_error(dir, links, "8,1e15,1\n16,2e15,1\n");
  EXPECT_NE(beyond_peak.find("above the bf16 peak"), std::string::npos) << beyond_peak;
}

// The HBM bandwidth is fitted from copies as a link is from transfers (a launch's fixed cost and
// a bandwidth); the links and the curve keep the base's figures where not measured.
TEST(Calibration, FitsTheHbmBandwidthFromCopiesAndKeepsWhatWasNotMeasured) {
  const std::string dir = temp_dir("calibration_hbm");
  const Topology base = calibration_base();  // 2000 GB/s of HBM
  std::ofstream copies(dir + "/hbm_samples.csv");
  copies << "bytes,time_us\n";
  for (double bytes = 1 << 21; bytes <= 1 << 29; bytes *= 4) {
    copies << bytes << "," << 3.0 + bytes / 1.7e6 << "\n";  // 1700 GB/s = 1.7e6 bytes/us
  }
  copies.close();
  const Topology t = calibrate_topology(base, dir);
  EXPECT_NEAR(t.gpu.hbm_bandwidth_gb_per_s, 1700.0, 1e-2);
  EXPECT_NE(t.gpu.source.find("HBM bandwidth calibrated by topoep calibrate"), std::string::npos)
      << t.gpu.source;
  EXPECT_EQ(t.scale_up.bandwidth_gb_per_s, base.scale_up.bandwidth_gb_per_s);
  EXPECT_EQ(t.gemm_efficiency.efficiency, base.gemm_efficiency.efficiency);
}

std::string hbm_calibration_error(const std::string& copies) {
  const std::string dir = temp_dir("calibration_hbm_refused");
  std::ofstream(dir + "/hbm_samples.csv") << "bytes,time_us\n" << copies;
  return calibration_error_in(dir);
}

TEST(Calibration, RefusesHbmCopiesItCannotFitOrTheBaseGpuCouldNotReach) {
  const std::string path = fs::path(testing::TempDir()) / "calibration_hbm_refused/hbm_samples.csv";
  EXPECT_EQ(hbm_calibration_error("1e6,10\n1e9,600\n"), "<no error>");
  EXPECT_EQ(hbm_calibration_error("1e6,10\n1e6,11\n"),
            path +
                ": field 'bytes': needs copies of at least two sizes to separate a launch's cost "
                "from the bandwidth; its 2 sample(s) all move 1e+06 bytes");
  EXPECT_EQ(hbm_calibration_error("1e6,10\nabc,11\n"),
            path + ":3: field 'bytes': 'abc' is not a number");
  // 1e9 bytes in 100 us is 10,000 GB/s: not the base's 2000.
  const std::string too_fast = hbm_calibration_error("1e6,10\n1e9,100\n");
  EXPECT_NE(too_fast.find("exceeds the HBM bandwidth of"), std::string::npos) << too_fast;
}

const char kCompareHeader[] =
    "step,microbatch,layer,planner,moe_forward_us,dispatch_us,compute_us,combine_us,"
    "weight_exposed_us,overhead_us,plan_hash\n";

TEST(Compare, ReportsThePerPhaseRelativeErrorOfMatchingRecords) {
  const std::string dir = temp_dir("compare");
  const std::string header = kCompareHeader;
  std::ofstream(dir + "/sim.csv") << header << "0,0,0,topoep,30,10,10,10,0,1,0x1\n"
                                  << "0,0,1,topoep,30,10,10,10,0,1,0x2\n"
                                  << "0,0,0,static,40,10,20,10,0,0,0x3\n";  // not measured
  std::ofstream(dir + "/measured.csv") << header << "0,0,0,topoep,33,8,10,15,,1,0x1\n"
                                       << "0,0,1,topoep,30,10,10,10,,2,0x5\n";
  const PerLayerComparison comparison = compare_per_layer(dir + "/sim.csv", dir + "/measured.csv");
  EXPECT_EQ(comparison.records, 2);
  EXPECT_EQ(comparison.same_plans, 1);  // layer 1 ran another plan
  const std::vector<PhaseError>& errors = comparison.phases;
  const auto phase = [&](const std::string& name) {
    return *std::find_if(errors.begin(), errors.end(),
                         [&](const PhaseError& e) { return e.phase == name; });
  };
  EXPECT_EQ(phase("dispatch_us").rows, 2);
  EXPECT_NEAR(phase("dispatch_us").worst_relative, 0.25, 1e-12);  // |10 - 8| / 8
  EXPECT_EQ(phase("dispatch_us").worst_at, "0,0,0,topoep");
  EXPECT_NEAR(phase("combine_us").mean_relative, (5.0 / 15) / 2, 1e-12);
  EXPECT_EQ(phase("weight_exposed_us").rows, 0);  // not measured
  EXPECT_NEAR(phase("overhead_us").worst_relative, 0.5, 1e-12);
}

// A simulation of another trace shares some (step, microbatch, layer) keys by chance; its errors
// would mean nothing, so records must match both ways.
TEST(Compare, RefusesRunsThatDoNotCoverTheSameRecords) {
  const std::string dir = temp_dir("compare_mismatch");
  const std::string header = kCompareHeader;
  std::ofstream(dir + "/sim.csv") << header << "0,0,0,topoep,30,10,10,10,0,1,0x1\n"
                                  << "0,0,1,topoep,30,10,10,10,0,1,0x2\n";
  std::ofstream(dir + "/extra.csv") << header << "0,0,0,topoep,30,10,10,10,,1,0x1\n"
                                    << "5,0,0,topoep,1,1,1,1,,1,0x9\n";
  std::ofstream(dir + "/fewer.csv") << header << "0,0,0,topoep,30,10,10,10,,1,0x1\n";
  const auto message = [&](const std::string& measured) -> std::string {
    try {
      compare_per_layer(dir + "/sim.csv", dir + "/" + measured);
    } catch (const FileInputError& error) {
      EXPECT_EQ(error.file(), dir + "/" + measured);
      return error.what();
    }
    return "<no error>";
  };
  EXPECT_NE(message("extra.csv")
                .find("record (step,microbatch,layer,planner) 5,0,0,topoep is "
                      "not in"),
            std::string::npos)
      << message("extra.csv");
  EXPECT_NE(message("fewer.csv").find("1 records of planner 'topoep', " + dir + "/sim.csv 2"),
            std::string::npos)
      << message("fewer.csv");
  // Two rows of one record: the counts agree, but layer 1 would never be compared.
  std::ofstream(dir + "/twice.csv") << header << "0,0,0,topoep,30,10,10,10,,1,0x1\n"
                                    << "0,0,0,topoep,31,10,10,10,,1,0x1\n";
  EXPECT_EQ(message("twice.csv"), dir +
                                      "/twice.csv: record (step,microbatch,layer,planner) "
                                      "0,0,0,topoep appears twice: one run, one row per record");
}

}  // namespace
}  // namespace topoep
