#include "sim/timeline.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace topoep {
namespace {

// A record's all-to-all time behind another microbatch's compute (LayerCost::a2a_hidden_forward
// and a2a_hidden_backward), shared among its four transfers in proportion to their lengths:
// their slices show what stays on the critical path.
struct HiddenShares {
  Picoseconds dispatch = 0, combine = 0, combine_grad = 0, dispatch_grad = 0;
};
HiddenShares hidden_shares(const LayerCost& c) {
  HiddenShares h;
  const Picoseconds hidden = c.a2a_hidden_forward + c.a2a_hidden_backward;
  const Picoseconds whole = c.dispatch + c.combine + c.combine_grad + c.dispatch_grad;
  if (hidden <= 0 || whole <= 0) return h;
  const auto share = [&](Picoseconds part) {
    return static_cast<Picoseconds>(static_cast<long double>(hidden) * part / whole);
  };
  h.dispatch = share(c.dispatch);
  h.combine = share(c.combine);
  h.combine_grad = share(c.combine_grad);
  h.dispatch_grad = hidden - h.dispatch - h.combine - h.combine_grad;
  return h;
}

double to_us(Picoseconds ps) { return static_cast<double>(ps) / 1e6; }

// The document {"displayTimeUnit": "ms", "traceEvents": [...]} as nlohmann::json's dump()
// writes it (keys sorted, no spaces), event by event, in pieces of about 1 MB.
class EventWriter {
 public:
  explicit EventWriter(std::function<void(const std::string&)> write) : write_(std::move(write)) {
    buffer_ = R"({"displayTimeUnit":"ms","traceEvents":[)";
  }
  void add(const nlohmann::json& event) {
    if (!first_) buffer_ += ',';
    first_ = false;
    buffer_ += event.dump();
    if (buffer_.size() >= (std::size_t{1} << 20)) flush();
  }
  void finish() {
    buffer_ += "]}\n";
    flush();
  }

 private:
  void flush() {
    write_(buffer_);
    buffer_.clear();
  }

  std::function<void(const std::string&)> write_;  // a copy: callers may pass a temporary
  std::string buffer_;
  bool first_ = true;
};

class TimelineBuilder {
 public:
  TimelineBuilder(EventWriter& events, int pid, int num_ranks)
      : events_(events), pid_(pid), num_ranks_(num_ranks) {}

  // A phase every rank spends alike.
  void shared(const char* name, Picoseconds duration, const nlohmann::json& args) {
    if (duration <= 0) return;
    for (int rank = 0; rank < num_ranks_; ++rank) slice(name, rank, duration, args);
    now_ += duration;
  }

  // A phase with per-rank durations that ends with the slowest rank. Of a transfer, `hidden`
  // runs behind another microbatch's compute (hidden_shares()): every rank's slice is
  // shortened in proportion.
  void per_rank(const char* name, const std::vector<Picoseconds>& durations, int scale,
                Picoseconds phase, const nlohmann::json& args, Picoseconds hidden = 0) {
    if (phase <= hidden) return;
    nlohmann::json slice_args = args;
    if (hidden > 0) slice_args["hidden_behind_compute_us"] = to_us(hidden);
    const long double exposed = static_cast<long double>(phase - hidden) / phase;
    for (int rank = 0; rank < num_ranks_; ++rank) {
      const Picoseconds whole = scale * durations[rank];
      const Picoseconds duration =
          hidden > 0 ? static_cast<Picoseconds>(static_cast<long double>(whole) * exposed) : whole;
      if (duration > 0) slice(name, rank, duration, slice_args);
    }
    now_ += phase - hidden;
  }

  Picoseconds now() const { return now_; }

 private:
  void slice(const char* name, int rank, Picoseconds duration, const nlohmann::json& args) {
    events_.add({{"name", name},
                 {"ph", "X"},
                 {"pid", pid_},
                 {"tid", rank},
                 {"ts", to_us(now_)},
                 {"dur", to_us(duration)},
                 {"args", args}});
  }

  EventWriter& events_;
  int pid_;
  int num_ranks_;
  Picoseconds now_ = 0;
};

// With pipeline stages, a planner's step as its schedule ran it (StepTotals::schedule): a track
// per stage, a slice per microbatch's forward or backward through a chunk (and under DualPipe
// the weight gradients of a split backward, apart), each stage's lead
// (its first layer's parameter all-gathers) and tail (the gradient syncs its last backward
// left), then the optimizer. Gaps are waits: warm-up and drain, hand-overs, slower stages.
void write_pipeline(EventWriter& events, int pid, const PipelineTimes& schedule,
                    Picoseconds optimizer) {
  const int stages = static_cast<int>(schedule.busy.size());
  for (int stage = 0; stage < stages; ++stage) {
    events.add({{"name", "thread_name"},
                {"ph", "M"},
                {"pid", pid},
                {"tid", stage},
                {"args", {{"name", "stage " + std::to_string(stage)}}}});
  }
  const auto slice = [&](const std::string& name, int stage, Picoseconds start, Picoseconds end,
                         const nlohmann::json& args) {
    if (end <= start) return;
    events.add({{"name", name},
                {"ph", "X"},
                {"pid", pid},
                {"tid", stage},
                {"ts", to_us(start)},
                {"dur", to_us(end - start)},
                {"args", args}});
  };
  std::vector<Picoseconds> last_end(static_cast<std::size_t>(stages), 0);
  for (int stage = 0; stage < stages && !schedule.ends.empty(); ++stage) {
    slice("parameter all-gathers (first layer)", stage, 0, schedule.ends[stage].lead,
          nlohmann::json::object());
  }
  for (const PipelineOp& op : schedule.ops) {
    const char* pass = op.forward ? "forward " : op.weight_grad ? "weight grads " : "backward ";
    slice(pass + std::to_string(op.microbatch), op.stage, op.start, op.end,
          {{"microbatch", op.microbatch}, {"chunk", op.chunk}});
    last_end[op.stage] = std::max(last_end[op.stage], op.end);
  }
  for (int stage = 0; stage < stages; ++stage) {
    const Picoseconds tail = schedule.ends.empty() ? 0 : schedule.ends[stage].tail;
    slice("gradient syncs (exposed)", stage, last_end[stage], last_end[stage] + tail,
          nlohmann::json::object());
    slice("optimizer", stage, schedule.makespan, schedule.makespan + optimizer,
          nlohmann::json::object());
  }
}

}  // namespace

std::string empty_timeline() {
  std::string text;
  EventWriter events([&](const std::string& piece) { text += piece; });
  events.finish();
  return text;
}

void write_step_timeline(const StepResult& step, const std::vector<std::string>& planners,
                         const TopologyView& topology,
                         const std::function<void(const std::string&)>& write) {
  EventWriter events(write);
  const int num_ranks = topology.num_ranks();
  for (std::size_t p = 0; p < planners.size(); ++p) {
    if (planners[p] == "ideal") continue;
    const int pid = static_cast<int>(p);
    events.add({{"name", "process_name"},
                {"ph", "M"},
                {"pid", pid},
                {"args", {{"name", planners[p] + " (step " + std::to_string(step.step) + ")"}}}});
    const StepTotals& totals = step.planners[p];
    if (!totals.schedule.ops.empty()) {
      write_pipeline(events, pid, totals.schedule, totals.optimizer);
      continue;
    }
    for (int rank = 0; rank < num_ranks; ++rank) {
      events.add({{"name", "thread_name"},
                  {"ph", "M"},
                  {"pid", pid},
                  {"tid", rank},
                  {"args",
                   {{"name", "rank " + std::to_string(rank) + " (node " +
                                 std::to_string(topology.node_of(rank)) + ")"}}}});
    }
    TimelineBuilder timeline(events, pid, num_ranks);
    for (const RecordResult& record : step.records) {
      const LayerCost& c = record.planners[p];
      const nlohmann::json args = {{"microbatch", record.microbatch}, {"layer", record.layer}};
      // The layer waits for its parameters before its forward begins.
      timeline.shared("dense parameter all-gather", c.dense_param_gather, args);
      timeline.shared("expert parameter all-gather", c.expert_param_gather, args);
      timeline.shared("dense-only layers and head (share)", c.outside_forward, args);
      timeline.shared("dense forward", c.dense_forward, args);
      timeline.shared("planner", c.overhead, args);
      timeline.per_rank("replica weights", c.ranks.weight_exposed, 1, c.weight_exposed, args);
      const HiddenShares hidden = hidden_shares(c);
      timeline.per_rank("dispatch", c.ranks.dispatch, 1, c.dispatch, args, hidden.dispatch);
      timeline.per_rank("expert compute", c.ranks.compute, 1, c.compute, args);
      timeline.per_rank("combine", c.ranks.combine, 1, c.combine, args, hidden.combine);
    }
    for (auto it = step.records.rbegin(); it != step.records.rend(); ++it) {
      const LayerCost& c = it->planners[p];
      const nlohmann::json args = {{"microbatch", it->microbatch}, {"layer", it->layer}};
      const HiddenShares hidden = hidden_shares(c);
      timeline.per_rank("combine grad", c.ranks.combine_grad, 1, c.combine_grad, args,
                        hidden.combine_grad);
      timeline.per_rank("expert compute grad", c.ranks.compute, 2, c.compute_grad, args);
      timeline.per_rank("dispatch grad", c.ranks.dispatch_grad, 1, c.dispatch_grad, args,
                        hidden.dispatch_grad);
      timeline.shared("dense backward", c.dense_backward(), args);
      timeline.shared("dense-only layers and head (share) grad", c.outside_backward(), args);
    }
    for (const RecordResult& record : step.records) {
      timeline.shared("dense gradient sync", record.planners[p].dense_grad_reduce,
                      {{"layer", record.layer}});
      timeline.shared("replica grad reduce", record.planners[p].grad_reduce,
                      {{"layer", record.layer}});
      timeline.shared("expert gradient sync", record.planners[p].expert_grad_sync,
                      {{"layer", record.layer}});
    }
    timeline.shared("optimizer", step.planners[p].optimizer, nlohmann::json::object());
  }
  events.finish();
}

}  // namespace topoep
