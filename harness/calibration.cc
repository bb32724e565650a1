#include "harness/calibration.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "common/file_input_error.h"
#include "common/json_fields.h"
#include "common/median.h"
#include "topologies/topology_json.h"

namespace topoep {
namespace {

// Rows of a simple CSV (no quoted fields): the header's columns, then values by name.
struct Csv {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // each row's line number in the file, for messages
  // "PATH:LINE" of a row, for messages.
  std::string where(std::size_t row, const std::string& path) const {
    return path + ":" + std::to_string(lines[row]);
  }
  int column(const std::string& name, const std::string& path) const {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) throw FileInputError(path, name, "column missing");
    return static_cast<int>(it - header.begin());
  }
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  for (std::string field; std::getline(stream, field, ',');) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.push_back("");
  return fields;
}

Csv read_csv(const std::string& path) {
  std::stringstream text(read_text_file(path));
  Csv csv;
  std::string line;
  if (!std::getline(text, line)) throw FileInputError(path, "", "is empty");
  csv.header = split(line);
  for (int n = 2; std::getline(text, line); ++n) {
    if (line.empty()) continue;
    csv.rows.push_back(split(line));
    csv.lines.push_back(n);
    if (csv.rows.back().size() != csv.header.size()) {
      throw FileInputError(path + ":" + std::to_string(n), "",
                           "has " + std::to_string(csv.rows.back().size()) +
                               " fields, the header " + std::to_string(csv.header.size()));
    }
  }
  return csv;
}

double number(const std::string& text, const std::string& path, const std::string& column) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && std::isfinite(value)) return value;
  } catch (const std::exception&) {
  }
  throw FileInputError(path, column, "'" + text + "' is not a number");
}

// A measurement: a finite number above zero (a size, a FLOP count or a time).
double positive(const Csv& csv, std::size_t row, int column, const std::string& path) {
  const std::string& name = csv.header[column];
  const std::string where = csv.where(row, path);
  const double value = number(csv.rows[row][column], where, name);
  if (!(value > 0))
    throw FileInputError(where, name, "must be above 0, got " + csv.rows[row][column]);
  return value;
}

}  // namespace

LinkFit fit_link(const std::vector<std::pair<double, double>>& samples) {
  LinkFit fit;
  fit.samples = static_cast<int>(samples.size());
  // Rows of time = alpha + bytes x (1 / bytes-per-µs), each divided by its measured time: the
  // fit minimises relative residuals. Timing noise is multiplicative (a few percent of each
  // transfer), so unweighted residuals would let the largest transfers' noise swamp the
  // smallest ones, which alone carry the latency.
  Eigen::MatrixXd a(samples.size(), 2);
  Eigen::VectorXd b(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const double weight = 1.0 / samples[i].second;
    a(i, 0) = weight;
    a(i, 1) = samples[i].first * weight;
    b(i) = 1.0;
  }
  // QR for a well-conditioned least-squares solve.
  Eigen::Vector2d x = a.colPivHouseholderQr().solve(b);
  if (x(0) < 0) {
    // A latency cannot be negative. The squared error is convex in (alpha, slope), so with
    // alpha held at 0 the best fit is the weighted least-squares line through the origin, not
    // the free fit's slope with its intercept dropped (which misses every sample by alpha).
    x(0) = 0;
    x(1) = a.col(1).dot(b) / a.col(1).squaredNorm();
  }
  fit.latency_us = x(0);
  const double us_per_byte = x(1);
  fit.bandwidth_gb_per_s = us_per_byte > 0 ? 1.0 / us_per_byte / 1000.0 : 0.0;
  double squared_us = 0;
  for (const auto& [bytes, time_us] : samples) {
    const double miss = x(0) + bytes * x(1) - time_us;
    squared_us += miss * miss;
  }
  fit.rms_residual_us = std::sqrt(squared_us / std::max<double>(1, samples.size()));
  return fit;
}

GemmEfficiencyCurve fit_gemm_curve(const std::vector<std::vector<double>>& samples,
                                   double peak_tflops) {
  std::map<double, std::vector<double>> by_tokens;
  for (const auto& s : samples) {
    // peak TFLOP/s = 1e6 FLOP per µs x peak.
    by_tokens[s[0]].push_back(s[1] / (peak_tflops * 1e6 * s[2]));
  }
  GemmEfficiencyCurve curve;
  for (const auto& [tokens, efficiencies] : by_tokens) {
    curve.tokens_per_expert.push_back(tokens);
    curve.efficiency.push_back(std::max(median(efficiencies), 1e-9));
  }
  return curve;
}

namespace {

// fit_link() over `samples`, which must hold two sizes or more (one size fits any fixed cost
// with some bandwidth) and grow with bytes; errors name `path` and `field`. `kind` names the
// samples, `separate` what the sizes tell apart.
LinkFit fit_sizes(const std::vector<std::pair<double, double>>& samples, const std::string& path,
                  const std::string& field, const char* kind, const char* separate) {
  const double first_bytes = samples.front().first;
  if (std::all_of(samples.begin(), samples.end(),
                  [first_bytes](const auto& s) { return s.first == first_bytes; })) {
    std::ostringstream why;
    why << "needs " << kind << " of at least two sizes to separate " << separate << "; its "
        << samples.size() << " sample(s) all move " << first_bytes << " bytes";
    throw FileInputError(path, field, why.str());
  }
  const LinkFit fit = fit_link(samples);
  if (fit.bandwidth_gb_per_s <= 0) {
    throw FileInputError(path, field, "time does not grow with bytes: no bandwidth to fit");
  }
  return fit;
}

// Sets `gpu`'s HBM bandwidth from the copies in `path` (bytes,time_us): a launch's fixed cost
// and a bandwidth, fitted as a link's are.
void calibrate_hbm(const Topology& base, const std::string& path, GpuSpec& gpu) {
  const Csv copies = read_csv(path);
  const int bytes_col = copies.column("bytes", path), time_col = copies.column("time_us", path);
  std::vector<std::pair<double, double>> samples;
  for (std::size_t i = 0; i < copies.rows.size(); ++i) {
    samples.push_back({positive(copies, i, bytes_col, path), positive(copies, i, time_col, path)});
  }
  if (samples.empty()) return;
  const LinkFit fit =
      fit_sizes(samples, path, "bytes", "copies", "a launch's cost from the bandwidth");
  // Above the base's figure (its datasheet's), the base describes another GPU than was measured.
  if (fit.bandwidth_gb_per_s > base.gpu.hbm_bandwidth_gb_per_s) {
    throw FileInputError(path, "time_us",
                         "the fitted bandwidth, " + std::to_string(fit.bandwidth_gb_per_s) +
                             " GB/s, exceeds the HBM bandwidth of '" + base.name + "' (" +
                             std::to_string(base.gpu.hbm_bandwidth_gb_per_s) + " GB/s, " +
                             base.gpu.name +
                             "): calibrate from the measured GPU's topology (--topology)");
  }
  std::ostringstream source;
  source << gpu.source << " HBM bandwidth calibrated by topoep calibrate from " << path << ": "
         << fit.bandwidth_gb_per_s << " GB/s achieved by a copy (relative least squares over "
         << fit.samples << " copies, launch cost " << fit.latency_us << " us, rms residual "
         << fit.rms_residual_us << " us); " << gpu.hbm_bandwidth_gb_per_s << " GB/s before.";
  gpu.hbm_bandwidth_gb_per_s = fit.bandwidth_gb_per_s;
  gpu.source = source.str();
}

}  // namespace

Topology calibrate_topology(const Topology& base, const std::string& dir) {
  Topology t = base;
  const std::string links_path = dir + "/link_samples.csv";
  const std::string gemm_path = dir + "/gemm_samples.csv";
  const std::string hbm_path = dir + "/hbm_samples.csv";
  if (!std::filesystem::exists(links_path) && !std::filesystem::exists(gemm_path) &&
      !std::filesystem::exists(hbm_path)) {
    throw FileInputError(dir, "",
                         "holds none of link_samples.csv, gemm_samples.csv and hbm_samples.csv");
  }
  // One GPU measures no links: a missing file keeps the base's figures.
  const Csv links = std::filesystem::exists(links_path) ? read_csv(links_path)
                                                        : Csv{{"link", "bytes", "time_us"}, {}, {}};
  const int link_col = links.column("link", links_path),
            bytes_col = links.column("bytes", links_path),
            time_col = links.column("time_us", links_path);
  std::map<std::string, std::vector<std::pair<double, double>>> by_link;
  for (std::size_t i = 0; i < links.rows.size(); ++i) {
    const std::string& link = links.rows[i][link_col];
    if (link != "nvlink" && link != "ib") {
      throw FileInputError(links.where(i, links_path), "link",
                           "'" + link + "' is not nvlink or ib");
    }
    by_link[link].push_back(
        {positive(links, i, bytes_col, links_path), positive(links, i, time_col, links_path)});
  }
  for (const auto& [name, samples] : by_link) {
    const LinkFit fit = fit_sizes(samples, links_path, name, "transfers", "latency from bandwidth");
    LinkSpec& link = name == "nvlink" ? t.scale_up : t.scale_out;
    // Achieved above the spec means the base describes other hardware than was measured.
    if (fit.bandwidth_gb_per_s > link.spec_gb_per_s) {
      throw FileInputError(links_path, name,
                           "the fitted bandwidth, " + std::to_string(fit.bandwidth_gb_per_s) +
                               " GB/s, exceeds the spec of '" + base.name + "' (" +
                               std::to_string(link.spec_gb_per_s) + " GB/s, " + link.name +
                               "): calibrate from the measured cluster's topology (--topology)");
    }
    link.bandwidth_gb_per_s = fit.bandwidth_gb_per_s;
    link.latency_us = fit.latency_us;
    std::ostringstream source;
    source << "calibrated by topoep calibrate from " << links_path
           << ": relative least squares over " << fit.samples << " transfers, rms residual "
           << fit.rms_residual_us << " us. Before: " << link.source;
    link.source = source.str();
  }
  const Csv gemms = std::filesystem::exists(gemm_path) ? read_csv(gemm_path)
                                                       : Csv{{"tokens", "flop", "time_us"}, {}, {}};
  const int tokens_col = gemms.column("tokens", gemm_path),
            flop_col = gemms.column("flop", gemm_path),
            gemm_time_col = gemms.column("time_us", gemm_path);
  std::vector<std::vector<double>> samples;
  for (std::size_t i = 0; i < gemms.rows.size(); ++i) {
    samples.push_back({positive(gemms, i, tokens_col, gemm_path),
                       positive(gemms, i, flop_col, gemm_path),
                       positive(gemms, i, gemm_time_col, gemm_path)});
  }
  if (!samples.empty()) {
    const std::string before = t.gemm_efficiency.source;
    t.gemm_efficiency = fit_gemm_curve(samples, t.gpu.peak_tflops_bf16);
    // The curve is flat beyond its ends (sim/README.md): from one size, every GEMM would run at
    // that size's efficiency, a one-token GEMM's or a large one's alike.
    if (t.gemm_efficiency.tokens_per_expert.size() < 2) {
      std::ostringstream why;
      why << "needs timings at two token counts or more to fit a curve; all " << samples.size()
          << " are at " << t.gemm_efficiency.tokens_per_expert.front() << " tokens";
      throw FileInputError(gemm_path, "tokens", why.str());
    }
    for (std::size_t i = 0; i < t.gemm_efficiency.efficiency.size(); ++i) {
      const double efficiency = t.gemm_efficiency.efficiency[i];
      if (efficiency > 1) {
        throw FileInputError(gemm_path, "time_us",
                             "at " + std::to_string(t.gemm_efficiency.tokens_per_expert[i]) +
                                 " tokens the median timing runs at " +
                                 std::to_string(efficiency * t.gpu.peak_tflops_bf16) +
                                 " TFLOP/s, above the bf16 peak of '" + base.name + "' (" +
                                 std::to_string(t.gpu.peak_tflops_bf16) + " TFLOP/s, " +
                                 t.gpu.name +
                                 "): calibrate from the measured GPU's topology (--topology)");
      }
    }
    t.gemm_efficiency.source =
        "calibrated by topoep calibrate from " + gemm_path + " (" + std::to_string(samples.size()) +
        " timings, median per token count, against the bf16 peak). Before: " + before;
  }
  if (std::filesystem::exists(hbm_path)) calibrate_hbm(base, hbm_path, t.gpu);
  // What calibrate writes must load: held to the topology file's own checks.
  try {
    parse_topology(topology_to_json(t).dump(), "calibrated topology");
  } catch (const FileInputError& error) {
    throw FileInputError(dir, "", std::string("the fitted topology is not valid: ") + error.what());
  }
  return t;
}

PerLayerComparison compare_per_layer(const std::string& sim_csv, const std::string& measured_csv) {
  const Csv sim = read_csv(sim_csv), measured = read_csv(measured_csv);
  const auto key_of = [](const Csv& csv, const std::vector<std::string>& row,
                         const std::string& path) {
    return row[csv.column("step", path)] + "," + row[csv.column("microbatch", path)] + "," +
           row[csv.column("layer", path)] + "," + row[csv.column("planner", path)];
  };
  const auto planner_of = [](const Csv& csv, const std::vector<std::string>& row,
                             const std::string& path) { return row[csv.column("planner", path)]; };
  if (measured.rows.empty()) throw FileInputError(measured_csv, "", "holds no record");
  // The two runs must be of the same records: a simulation of another trace matches some keys
  // by chance, and its errors would be meaningless.
  std::map<std::string, const std::vector<std::string>*> simulated;
  std::map<std::string, int> simulated_per_planner, measured_per_planner;
  // A record listed twice would stand in for one the file lacks, and the per-planner counts
  // below would still agree.
  const auto duplicate = [](const std::string& path, const std::string& key) {
    return FileInputError(path, "",
                          "record (step,microbatch,layer,planner) " + key +
                              " appears twice: one run, one row per record");
  };
  for (const auto& row : sim.rows) {
    const std::string key = key_of(sim, row, sim_csv);
    if (!simulated.emplace(key, &row).second) throw duplicate(sim_csv, key);
    ++simulated_per_planner[planner_of(sim, row, sim_csv)];
  }
  // Each measured row's key and simulated twin, found once for every comparison below.
  std::vector<std::string> keys;
  std::set<std::string> measured_keys;
  std::vector<const std::vector<std::string>*> twins;
  for (const auto& row : measured.rows) {
    const std::string key = key_of(measured, row, measured_csv);
    const auto twin = simulated.find(key);
    if (twin == simulated.end()) {
      throw FileInputError(measured_csv, "",
                           "record (step,microbatch,layer,planner) " + key + " is not in " +
                               sim_csv + ": simulate the trace and planner the harness ran");
    }
    if (!measured_keys.insert(key).second) throw duplicate(measured_csv, key);
    keys.push_back(key);
    twins.push_back(twin->second);
    ++measured_per_planner[planner_of(measured, row, measured_csv)];
  }
  for (const auto& [planner, count] : measured_per_planner) {
    if (simulated_per_planner[planner] != count) {
      throw FileInputError(measured_csv, "",
                           std::to_string(count) + " records of planner '" + planner + "', " +
                               sim_csv + " " + std::to_string(simulated_per_planner[planner]) +
                               ": simulate the trace the harness ran, all of it");
    }
  }
  PerLayerComparison comparison;
  comparison.records = static_cast<int>(measured.rows.size());
  const auto has_hash = [](const Csv& csv) {
    return std::find(csv.header.begin(), csv.header.end(), "plan_hash") != csv.header.end();
  };
  if (has_hash(sim) && has_hash(measured)) {
    comparison.same_plans = 0;
    const int measured_col = measured.column("plan_hash", measured_csv),
              sim_col = sim.column("plan_hash", sim_csv);
    for (std::size_t i = 0; i < measured.rows.size(); ++i) {
      const std::string& hash = measured.rows[i][measured_col];
      if (!hash.empty() && hash == (*twins[i])[sim_col]) ++comparison.same_plans;
    }
  }
  for (const char* phase : {"dispatch_us", "compute_us", "combine_us", "weight_exposed_us",
                            "overhead_us", "moe_forward_us"}) {
    PhaseError e;
    e.phase = phase;
    double sum = 0;
    const int measured_col = measured.column(phase, measured_csv);
    // Looked up at the first measured value: a phase nobody measured needs no simulated column.
    int sim_col = -1;
    for (std::size_t i = 0; i < measured.rows.size(); ++i) {
      const std::string& value = measured.rows[i][measured_col];
      if (value.empty()) continue;
      if (sim_col < 0) sim_col = sim.column(phase, sim_csv);
      const std::string& sim_value = (*twins[i])[sim_col];
      if (sim_value.empty()) continue;
      const double m = number(value, measured_csv, phase), s = number(sim_value, sim_csv, phase);
      if (m <= 0) continue;
      const double relative = std::abs(s - m) / m;
      ++e.rows;
      sum += relative;
      if (relative >= e.worst_relative) {
        e.worst_relative = relative;
        e.worst_at = keys[i];
      }
    }
    if (e.rows > 0) e.mean_relative = sum / e.rows;
    comparison.phases.push_back(e);
  }
  return comparison;
}

}  // namespace topoep
