#include "sim/sweep_grid.h"

#include <algorithm>
#include <map>

#include "common/json_fields.h"
#include "common/text_list.h"
#include "models/model_json.h"
#include "solver/input_error.h"
#include "topologies/topology_presets.h"
#include "topologies/topology_shape.h"
#include "traces/trace_reader.h"

namespace topoep {
namespace {

const std::vector<std::string> kIntegerKeys = {"nodes",
                                               "gpus_per_node",
                                               "slots",
                                               "dense_grad_bytes",
                                               "data_parallel",
                                               "pipeline_stages",
                                               "virtual_stages",
                                               "activation_grad_bytes",
                                               "eplb_period_steps",
                                               "eplb_window_steps",
                                               "topoep_replica_uses",
                                               "topoep_max_moves",
                                               "mtp_layers"};
// Of those, the ones 0 is a value of: 0 spare slots is a cluster; 0 moves is the solver's
// default cap; 0 dense gradient bytes leaves the data-parallel sync out; 0 MTP modules trains
// none.
const std::vector<std::string> kFromZeroKeys = {"slots", "topoep_max_moves", "dense_grad_bytes",
                                                "mtp_layers"};
const std::vector<std::string> kStringKeys = {"topology", "model"};

// An eplb_groups value as parse_eplb_groups() reads it: a name, or a count written as a number.
std::string eplb_groups_text(const nlohmann::json& value) {
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  return value.is_string() ? value.get<std::string>() : "";
}

class GridReader {
 public:
  explicit GridReader(std::string path) : path_(std::move(path)) {}

  SweepGrid read() {
    const nlohmann::json root = parse_json_text(read_text_file(path_), path_);
    if (!root.is_object()) throw FileInputError(path_, "", "a grid is a JSON object");
    SweepGrid grid;
    grid.planners = {"topoep", "eplb", "eplb-microbatch", "shadowing", "static", "ideal"};
    std::vector<std::string> axes;
    nlohmann::json listed = nlohmann::json::array({nlohmann::json::object()});
    for (const auto& [key, value] : root.items()) {
      if (key == "comment") continue;
      if (key == "planners") {
        grid.planners = read_planners(value);
      } else if (key == "points") {
        listed = read_points(value);
      } else if (is_listed(sweep_parameter_columns(), key)) {
        if (!value.is_array() || value.empty()) fail(key, "must be a non-empty list of values");
        for (std::size_t i = 0; i < value.size(); ++i) {
          const std::string where = key + "[" + std::to_string(i) + "]";
          check_value(key, value[i], where);
          for (std::size_t j = 0; j < i; ++j) {
            if (value[j] == value[i]) {
              fail(where, "repeats " + key + "[" + std::to_string(j) +
                              "]: list each value once (equal points are one point)");
            }
          }
        }
        axes.push_back(key);
      } else {
        fail(key, "unknown key (known: planners, points, " + known_keys() + ")");
      }
    }
    const bool has_trace = is_listed(axes, "trace") ||
                           std::all_of(listed.begin(), listed.end(),
                                       [](const nlohmann::json& p) { return p.contains("trace"); });
    if (!has_trace) fail("trace", "is required: trace directories or {\"synthetic\": {...}}");
    check_planner_options(axes, listed, grid.planners);
    for (std::size_t i = 0; i < listed.size(); ++i) {
      for (const std::string& axis : axes) {
        if (listed[i].contains(axis)) {
          fail("points[" + std::to_string(i) + "]." + axis,
               "is also an axis of the grid: a listed point sets only keys that are not axes");
        }
      }
    }
    // Axes in the documented order, the last varying fastest.
    std::sort(axes.begin(), axes.end(), [](const std::string& a, const std::string& b) {
      const auto& order = sweep_parameter_columns();
      return std::find(order.begin(), order.end(), a) < std::find(order.begin(), order.end(), b);
    });
    std::vector<std::size_t> digit(axes.size(), 0);
    for (bool more = true; more;) {
      for (const nlohmann::json& extra : listed) {
        nlohmann::json values = extra;
        for (std::size_t a = 0; a < axes.size(); ++a) values[axes[a]] = root[axes[a]][digit[a]];
        grid.points.push_back(prepare(static_cast<int>(grid.points.size()), values, grid.planners));
      }
      more = false;
      for (std::size_t a = axes.size(); a-- > 0;) {
        if (++digit[a] < root[axes[a]].size()) {
          more = true;
          break;
        }
        digit[a] = 0;
      }
    }
    // Shards, resumes and merges match results by point key: each key must name one point.
    std::map<std::string, int> first_with_key;
    for (const SweepPoint& point : grid.points) {
      const auto [it, added] = first_with_key.emplace(point.key, point.index);
      if (!added) {
        fail("points", "point " + std::to_string(point.index) + " repeats point " +
                           std::to_string(it->second) + " " + point.key + ": list each point once");
      }
    }
    return grid;
  }

 private:
  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw FileInputError(path_, key, message);
  }

  static std::string known_keys() { return join_names(sweep_parameter_columns()); }

  // A planner option with none of its planners compared would only repeat points.
  void check_planner_options(const std::vector<std::string>& axes, const nlohmann::json& listed,
                             const std::vector<std::string>& compared_planners) const {
    for (const std::string& key : sweep_parameter_columns()) {
      const std::vector<std::string> planners = planners_reading_option(key);
      if (planners.empty()) continue;
      const bool given = is_listed(axes, key) ||
                         std::any_of(listed.begin(), listed.end(),
                                     [&](const nlohmann::json& p) { return p.contains(key); });
      const bool compared = std::any_of(planners.begin(), planners.end(), [&](const auto& name) {
        return is_listed(compared_planners, name);
      });
      if (given && !compared) {
        fail(key, "applies to the " + spoken_list(planners) +
                      (planners.size() > 1 ? " planners" : " planner") +
                      ", which \"planners\" does not list");
      }
    }
  }

  std::vector<std::string> read_planners(const nlohmann::json& value) const {
    if (!value.is_array() || value.empty()) fail("planners", "must be a non-empty list of names");
    std::vector<std::string> planners;
    for (const auto& name : value) {
      if (!name.is_string()) fail("planners", "must list planner names (strings)");
      planners.push_back(name.get<std::string>());
    }
    return planners;
  }

  nlohmann::json read_points(const nlohmann::json& value) const {
    if (!value.is_array() || value.empty()) fail("points", "must be a non-empty list of objects");
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string where = "points[" + std::to_string(i) + "]";
      if (!value[i].is_object()) fail(where, "must be an object of parameter values");
      for (const auto& [key, v] : value[i].items()) {
        if (!is_listed(sweep_parameter_columns(), key)) {
          fail(where + "." + key, "unknown key (known: " + known_keys() + ")");
        }
        check_value(key, v, where + "." + key);
      }
    }
    return value;
  }

  // A value that must be one of the names `parse` reads (`names` says which).
  template <typename Enum>
  void check_name(const nlohmann::json& v, const std::string& where,
                  bool (*parse)(const std::string&, Enum*), const std::string& names) const {
    Enum parsed;
    if (!v.is_string() || !parse(v.get<std::string>(), &parsed)) fail(where, "must be " + names);
  }

  void check_value(const std::string& key, const nlohmann::json& v,
                   const std::string& where) const {
    if (key == "trace") {
      if (v.is_string()) return;
      if (v.is_object() && v.size() == 1 && v.contains("synthetic") && v["synthetic"].is_object())
        return;
      fail(where, "must be a trace directory or {\"synthetic\": {...}}");
    }
    if (is_listed(kStringKeys, key)) {
      if (!v.is_string()) fail(where, "must be a preset name or a file path");
      return;
    }
    if (key == "uneven_homes" || key == "fp8_gemms" || key == "recompute_moe_act" ||
        key == "recompute_layernorm" || key == "recompute_mla_up_proj" ||
        key == "memory_bound_kernels") {
      if (!v.is_boolean()) fail(where, "must be true or false");
      return;
    }
    if (key == "dispatcher") {
      return check_name(v, where, parse_dispatcher, "\"alltoall\" or \"deepep\"");
    }
    if (key == "eplb_groups") {
      int parsed = 0;
      if (!parse_eplb_groups(eplb_groups_text(v), &parsed)) {
        fail(where, "must be \"nodes\", \"model\" or a count of groups");
      }
      return;
    }
    if (key == "pipeline_layers") {
      const bool counts =
          v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const auto& n) {
            return n.is_number_integer() && n.template get<std::int64_t>() >= 1 &&
                   n.template get<std::int64_t>() <= 1000000;
          });
      if (!counts) fail(where, "must be a list of each stage's (chunk's) MoE layers, each >= 1");
      return;
    }
    if (key == "pipeline_schedule") {
      return check_name(v, where, parse_pipeline_schedule,
                        "\"1f1b\", \"dualpipe\" or \"dualpipev\"");
    }
    if (key == "dense_sync") {
      return check_name(v, where, parse_dense_sync, "\"allreduce\" or \"distributed\"");
    }
    if (key == "topoep_ib_opened_run") {
      if (!v.is_number_integer() || (v.get<std::int64_t>() != 0 && v.get<std::int64_t>() != 1)) {
        fail(where, "must be 0 or 1");
      }
      return;
    }
    if (is_listed(kIntegerKeys, key)) {
      const std::int64_t min = is_listed(kFromZeroKeys, key) ? 0 : 1;
      if (!v.is_number_integer() || v.get<std::int64_t>() < min ||
          v.get<std::int64_t>() > 1000000) {
        fail(where, "must be an integer >= " + std::to_string(min));
      }
      return;
    }
    // 1e6 bounds times in µs and bandwidths in GB/s as a topology file does: beyond it is a
    // unit mistake, and a time's conversion to picoseconds would overflow.
    if (!v.is_number() || !(v.get<double>() >= 0) || !(v.get<double>() <= 1e6)) {
      fail(where, "must be a number from 0 to 1e6");
    }
    if ((key == "nvlink_gb_per_s" || key == "ib_gb_per_s") && !(v.get<double>() > 0)) {
      fail(where, "must be above 0");
    }
    if (key == "topoep_ib_load_slack" && !(v.get<double>() <= 1)) fail(where, "must be 0 to 1");
  }

  const Topology& topology(const std::string& name) {
    auto it = topologies_.find(name);
    if (it == topologies_.end()) it = topologies_.emplace(name, load_topology(name)).first;
    return it->second;
  }

  const ModelSpec& model(const std::string& name) {
    auto it = models_.find(name);
    if (it == models_.end()) it = models_.emplace(name, load_model(name)).first;
    return it->second;
  }

  // Without a model axis: a recorded trace's one preset with its experts and top-k (as
  // `topoep simulate` takes it), deepseek-v3 for a synthetic one (shaped by the model).
  std::string default_model(const nlohmann::json& trace) {
    if (!trace.is_string()) return "deepseek-v3";
    const TraceMetadata& m = trace_metadata(trace.get<std::string>());
    return implied_model_preset(m.num_experts, m.top_k, "model");
  }

  const TraceMetadata& trace_metadata(const std::string& path) {
    auto it = traces_.find(path);
    if (it == traces_.end()) it = traces_.emplace(path, TraceReader(path).metadata()).first;
    return it->second;
  }

  SyntheticTraceSpec synthetic_spec(const nlohmann::json& spec_json, const SimConfig& config) {
    JsonObjectReader r(spec_json, path_, "trace.synthetic");
    SyntheticTraceSpec spec;
    spec.num_ranks = config.topology.num_gpus();
    spec.gpus_per_node = config.topology.gpus_per_node;
    spec.num_experts = config.model.num_experts;
    spec.top_k = config.model.top_k;
    if (r.has("steps")) spec.steps = static_cast<int>(r.int_field("steps", 1, 1000000));
    if (r.has("microbatches"))
      spec.microbatches = static_cast<int>(r.int_field("microbatches", 1, 100000));
    if (r.has("layers"))
      spec.num_layers = static_cast<int>(r.int_field("layers", 1, TraceLimits::kLayers));
    if (r.has("tokens_per_rank")) {
      spec.tokens_per_rank = static_cast<int>(r.int_field("tokens_per_rank", 1, 1 << 24));
    }
    if (r.has("popularity")) {
      const std::string popularity = r.string_field("popularity");
      if (popularity != "zipf" && popularity != "lognormal") {
        r.fail("popularity", "must be zipf or lognormal");
      }
      spec.popularity = popularity == "zipf" ? Popularity::kZipf : Popularity::kLogNormal;
    }
    if (r.has("hot_ratio")) spec.hot_ratio = r.number_field("hot_ratio", 1, false, 1e9);
    if (r.has("drift")) spec.drift_per_step = r.number_field("drift", 0, false, 1);
    if (r.has("layer_correlation"))
      spec.layer_correlation = r.number_field("layer_correlation", 0, false, 1);
    if (r.has("rank_variation"))
      spec.rank_variation = r.number_field("rank_variation", 0, false, 4);
    if (r.has("seed")) spec.seed = static_cast<std::uint64_t>(r.int_field("seed", 0, INT64_MAX));
    // Each data-parallel group on its own routing: D x the GPUs as ranks (sim/replay.h,
    // routing_groups()); one group has no other to differ from.
    if (r.has("groups_apart")) {
      const nlohmann::json& apart = r.raw_field("groups_apart");
      if (!apart.is_boolean()) r.fail("groups_apart", "must be true or false");
      if (apart.get<bool>()) spec.num_ranks *= config.options.data_parallel;
    }
    r.finish();
    check_synthetic_trace_spec(spec);
    return spec;
  }

  // The grid key an InputError from the checks most likely comes from, for the message.
  static std::string key_for(const std::string& field, const nlohmann::json& values) {
    if (field == "topology" || field == "num_experts" || field == "metadata.num_ranks" ||
        field == "metadata.gpus_per_node") {
      for (const char* key : {"nodes", "gpus_per_node", "topology"}) {
        if (values.contains(key)) return key;
      }
      return field == "topology" ? "trace" : "model";
    }
    if (field.rfind("model", 0) == 0) return values.contains("model") ? "model" : "trace";
    if (field == "planner") return "planners";
    return field;
  }

  SweepPoint prepare(int index, const nlohmann::json& values,
                     const std::vector<std::string>& planners) {
    SweepPoint point;
    point.index = index;
    point.values = values;
    point.key = values.dump();
    const auto get = [&](const char* key, auto fallback) {
      return values.contains(key) ? values[key].get<decltype(fallback)>() : fallback;
    };
    try {
      SimConfig& c = point.config;
      c.plan_hashes = false;  // a sweep reports totals only
      c.topology = reshaped(topology(get("topology", std::string("h800-4x8"))), get("nodes", 0),
                            get("gpus_per_node", 0));
      c.topology.scale_up.bandwidth_gb_per_s =
          get("nvlink_gb_per_s", c.topology.scale_up.bandwidth_gb_per_s);
      c.topology.scale_out.bandwidth_gb_per_s =
          get("ib_gb_per_s", c.topology.scale_out.bandwidth_gb_per_s);
      c.topology.scale_up.latency_us = get("nvlink_latency_us", c.topology.scale_up.latency_us);
      c.topology.scale_out.latency_us = get("ib_latency_us", c.topology.scale_out.latency_us);
      const nlohmann::json& trace = values.at("trace");
      const std::string model_name =
          values.contains("model") ? values["model"].get<std::string>() : default_model(trace);
      c.model = model(model_name);
      c.model.fp8_gemms = get("fp8_gemms", c.model.fp8_gemms);
      c.slots_per_rank = get("slots", 1);
      c.homes = get("uneven_homes", false) ? HomeLayout::kUneven : HomeLayout::kEven;
      c.options.recompute_moe_activation = get("recompute_moe_act", false);
      c.options.recompute_layernorm = get("recompute_layernorm", false);
      c.options.recompute_mla_up_proj = get("recompute_mla_up_proj", false);
      c.options.mtp_layers = get("mtp_layers", 0);
      c.options.memory_bound_kernels = get("memory_bound_kernels", false);
      c.options.weight_overlap_fraction =
          get("weight_overlap_fraction", c.options.weight_overlap_fraction);
      c.options.gradient_overlap_fraction =
          get("gradient_overlap_fraction", c.options.gradient_overlap_fraction);
      c.options.a2a_overlap_fraction = get("a2a_overlap_fraction", c.options.a2a_overlap_fraction);
      c.options.pipeline_stages = get("pipeline_stages", c.options.pipeline_stages);
      c.options.virtual_stages = get("virtual_stages", c.options.virtual_stages);
      // check_value() has read the name.
      parse_pipeline_schedule(get("pipeline_schedule",
                                  std::string(pipeline_schedule_name(c.options.pipeline_schedule))),
                              &c.options.pipeline_schedule);
      // A list of each stage's (chunk's) layers says how many stages there are, as on the
      // command line, unless the point gives them.
      c.options.pipeline_layers = get("pipeline_layers", c.options.pipeline_layers);
      const auto listed = static_cast<int>(c.options.pipeline_layers.size());
      const int per_stage = c.options.chunks_per_stage();
      if (listed > 0 && !values.contains("pipeline_stages") && per_stage > 0 &&
          listed % per_stage == 0) {
        c.options.pipeline_stages = listed / per_stage;
      }
      c.options.dense_grad_bytes = get("dense_grad_bytes", c.options.dense_grad_bytes);
      // check_value() has read the name.
      parse_dense_sync(get("dense_sync", std::string(dense_sync_name(c.options.dense_sync))),
                       &c.options.dense_sync);
      c.options.data_parallel = get("data_parallel", c.options.data_parallel);
      c.options.activation_grad_bytes =
          get("activation_grad_bytes", c.options.activation_grad_bytes);
      c.options.optimizer_bytes_per_param =
          get("optimizer_bytes_per_param", c.options.optimizer_bytes_per_param);
      c.options.optimizer_state_bytes_per_param =
          get("optimizer_state_bytes_per_param", c.options.optimizer_state_bytes_per_param);
      // check_value() has read the name.
      parse_dispatcher(get("dispatcher", std::string(dispatcher_name(c.options.dispatcher))),
                       &c.options.dispatcher);
      PlannerOptions& o = c.planner_options;
      o.topoep_solve_us = get("topoep_solve_us", o.topoep_solve_us);
      o.host_roundtrip_us = get("host_roundtrip_us", o.host_roundtrip_us);
      o.eplb_cpu_us_per_layer = get("eplb_cpu_us_per_layer", o.eplb_cpu_us_per_layer);
      o.eplb_period_steps = get("eplb_period_steps", o.eplb_period_steps);
      o.eplb_window_steps = get("eplb_window_steps", o.eplb_window_steps);
      if (values.contains("eplb_groups")) {  // check_value() has read it
        parse_eplb_groups(eplb_groups_text(values["eplb_groups"]), &o.eplb_groups);
      }
      o.topoep_replica_uses = get("topoep_replica_uses", o.topoep_replica_uses);
      o.topoep_ib_load_slack = get("topoep_ib_load_slack", o.topoep_ib_load_slack);
      o.topoep_ib_opened_run = get("topoep_ib_opened_run", o.topoep_ib_opened_run);
      o.topoep_max_moves = get("topoep_max_moves", o.topoep_max_moves);
      c.planners = planners;
      c.threads = 1;
      TraceMetadata metadata;
      if (trace.is_string()) {
        point.trace_path = trace.get<std::string>();
        metadata = trace_metadata(point.trace_path);
      } else {
        point.synthetic = synthetic_spec(trace["synthetic"], c);
        metadata.num_ranks = point.synthetic.num_ranks;
        metadata.num_experts = point.synthetic.num_experts;
        metadata.top_k = point.synthetic.top_k;
        metadata.num_layers = point.synthetic.num_layers;
        metadata.microbatches = point.synthetic.microbatches;
        metadata.steps = point.synthetic.steps;
      }
      check_sim_config(c, metadata);
      const bool deduplicated = c.options.dispatcher == Dispatcher::kDeepEP;
      point.columns = {{"trace", trace.is_string() ? trace.get<std::string>()
                                                   : "synthetic:" + trace["synthetic"].dump()},
                       {"topology", get("topology", std::string("h800-4x8"))},
                       {"model", model_name},
                       {"nodes", c.topology.nodes},
                       {"gpus_per_node", c.topology.gpus_per_node},
                       {"nvlink_gb_per_s", c.topology.scale_up.bandwidth_gb_per_s},
                       {"ib_gb_per_s", c.topology.scale_out.bandwidth_gb_per_s},
                       {"nvlink_latency_us", c.topology.scale_up.latency_us},
                       {"ib_latency_us", c.topology.scale_out.latency_us},
                       {"slots", c.slots_per_rank},
                       {"uneven_homes", c.homes == HomeLayout::kUneven},
                       {"fp8_gemms", c.model.fp8_gemms},
                       {"pipeline_layers", join_numbers(c.options.pipeline_layers, ",")},
                       {"topoep_solve_us", o.topoep_solve_us},
                       {"host_roundtrip_us", o.host_roundtrip_us},
                       {"eplb_cpu_us_per_layer", o.eplb_cpu_us_per_layer},
                       {"eplb_period_steps", o.eplb_period_steps},
                       {"eplb_window_steps", o.eplb_window_steps},
                       {"eplb_groups", eplb_groups_name(o.eplb_groups)},
                       {"topoep_replica_uses", o.topoep_replica_uses},
                       {"topoep_ib_load_slack", topoep_ib_load_slack(o, deduplicated)},
                       {"topoep_ib_opened_run", topoep_ib_opened_run(o, deduplicated) ? 1 : 0},
                       {"topoep_max_moves", o.topoep_max_moves}};
      point.columns.update(sim_options_json(c.options));
    } catch (const InputError& error) {
      fail(key_for(error.field(), values),
           "point " + std::to_string(index) + " " + point.key + ": " + error.what());
    } catch (const FileInputError& error) {
      if (error.file() == path_) throw;  // the grid's own field (a synthetic trace spec)
      // A trace, topology or model file the point names is unreadable or invalid.
      throw FileInputError(path_, "", "point " + std::to_string(index) + ": " + error.what());
    }
    return point;
  }

  std::string path_;
  std::map<std::string, Topology> topologies_;
  std::map<std::string, ModelSpec> models_;
  std::map<std::string, TraceMetadata> traces_;
};

}  // namespace

const std::vector<std::string>& sweep_parameter_columns() {
  static const std::vector<std::string> columns = {"trace",
                                                   "topology",
                                                   "model",
                                                   "nodes",
                                                   "gpus_per_node",
                                                   "nvlink_gb_per_s",
                                                   "ib_gb_per_s",
                                                   "nvlink_latency_us",
                                                   "ib_latency_us",
                                                   "slots",
                                                   "uneven_homes",
                                                   "fp8_gemms",
                                                   "weight_overlap_fraction",
                                                   "gradient_overlap_fraction",
                                                   "dense_grad_bytes",
                                                   "dense_sync",
                                                   "data_parallel",
                                                   "activation_grad_bytes",
                                                   "optimizer_bytes_per_param",
                                                   "optimizer_state_bytes_per_param",
                                                   "dispatcher",
                                                   "a2a_overlap_fraction",
                                                   "pipeline_stages",
                                                   "virtual_stages",
                                                   "pipeline_schedule",
                                                   "pipeline_layers",
                                                   "recompute_moe_act",
                                                   "recompute_layernorm",
                                                   "recompute_mla_up_proj",
                                                   "mtp_layers",
                                                   "memory_bound_kernels",
                                                   "topoep_solve_us",
                                                   "host_roundtrip_us",
                                                   "eplb_cpu_us_per_layer",
                                                   "eplb_period_steps",
                                                   "eplb_window_steps",
                                                   "eplb_groups",
                                                   "topoep_replica_uses",
                                                   "topoep_ib_load_slack",
                                                   "topoep_ib_opened_run",
                                                   "topoep_max_moves"};
  return columns;
}

SweepGrid load_sweep_grid(const std::string& path) { return GridReader(path).read(); }

}  // namespace topoep
