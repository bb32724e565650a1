#include "sim/backward_sync.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <tuple>

namespace topoep {
namespace {

// A stretch of the backward of which the stream may use `idle` picoseconds of its `length`,
// from `start` on the group's clock.
struct IdleStretch {
  Picoseconds start = 0;
  Picoseconds length = 0;
  Picoseconds idle = 0;
};

// A sync on a group's stream: its layer and field, its time, the first stretch it may use (its
// gradients are complete when that stretch begins) and whether the groups run it together.
struct Sync {
  int layer = 0;
  Picoseconds LayerSyncExposed::*field = nullptr;
  Picoseconds time = 0;
  std::size_t ready_stretch = 0;
  bool between_groups = false;
};

// Where a stream is: `used` picoseconds into the idle time of stretch `stretch`, or, with
// `stretch` past the last one, `used` picoseconds past the backward's end.
struct Position {
  std::size_t stretch = 0;
  Picoseconds used = 0;
  bool operator<(const Position& other) const {
    return std::tie(stretch, used) < std::tie(other.stretch, other.used);
  }
};

// One group's stream over its last-microbatch backward, its syncs in the order they are ready.
class GroupStream {
 public:
  explicit GroupStream(const GroupBackward& group) : exposed_(group.layers.size()) {
    Picoseconds clock = group.start;
    for (int layer = static_cast<int>(group.layers.size()) - 1; layer >= 0; --layer) {
      const LayerSyncWork& work = group.layers[layer];
      clock += work.combine_grad;
      add_stretch(clock, work.compute_grad, work.expert_compute_idle);
      clock += work.dispatch_grad;
      // The layer's expert gradients are complete once its MoE backward ends: the replicas'
      // reach their homes, then the homes sync with the other groups.
      add_sync(layer, &LayerSyncExposed::replica_reduction, work.replica_reduction, false);
      add_sync(layer, &LayerSyncExposed::expert_sync, work.expert_sync, true);
      add_stretch(clock, work.attention, work.attention_idle);
      // Its dense gradients are complete once its attention backward ends.
      add_sync(layer, &LayerSyncExposed::dense_sync, work.dense_sync, true);
      add_stretch(clock, work.outside, work.outside_idle);
    }
    end_ = clock;
  }

  bool done() const { return next_ == syncs_.size(); }
  bool waits_for_the_groups() const { return !done() && syncs_[next_].between_groups; }

  // Runs the syncs that are this group's alone, up to the next one between the groups.
  void run_own() {
    while (!done() && !syncs_[next_].between_groups) run_next(next_start());
  }

  // The next sync's start on this stream alone, and when that is on the group's clock.
  Position next_start() const {
    return usable(std::max(at_, Position{syncs_[next_].ready_stretch, 0}));
  }
  Picoseconds clock_at(const Position& position) const {
    if (position.stretch == stretches_.size()) return end_ + position.used;
    const IdleStretch& s = stretches_[position.stretch];
    // Idle time is spread over the stretch; round up to the moment it has all been offered.
    const __int128 scaled = static_cast<__int128>(position.used) * s.length;
    return s.start + static_cast<Picoseconds>((scaled + s.idle - 1) / s.idle);
  }

  // Runs the next sync from `start` (no earlier than next_start()), or from where the stream
  // is at `clock` if that is later: a sync between the groups waits for the last of them.
  void run_next(Position start, Picoseconds clock = 0) {
    if (clock > clock_at(start)) start = std::max(start, position_at(clock));
    const Sync& sync = syncs_[next_++];
    Position position = start;
    Picoseconds left = sync.time;
    while (left > 0) {
      if (position.stretch == stretches_.size()) {
        position.used += left;
        break;
      }
      const Picoseconds done = std::min(left, stretches_[position.stretch].idle - position.used);
      position.used += done;
      left -= done;
      position = usable(position);
    }
    // What it adds past the backward's end, any wait for the other groups included.
    exposed_[sync.layer].*sync.field += past_end(position) - past_end(at_);
    at_ = position;
  }

  const std::vector<LayerSyncExposed>& exposed() const { return exposed_; }

 private:
  void add_stretch(Picoseconds& clock, Picoseconds length, Picoseconds idle) {
    stretches_.push_back({clock, length, idle});
    clock += length;
  }
  void add_sync(int layer, Picoseconds LayerSyncExposed::*field, Picoseconds time,
                bool between_groups) {
    if (time > 0) syncs_.push_back({layer, field, time, stretches_.size(), between_groups});
  }

  // The first position at or after `position` with idle time left to use.
  Position usable(Position position) const {
    while (position.stretch < stretches_.size() &&
           position.used >= stretches_[position.stretch].idle) {
      position = {position.stretch + 1, 0};
    }
    return position;
  }
  // Where the stream would be at `clock`, had it used none of the idle time before.
  Position position_at(Picoseconds clock) const {
    if (clock >= end_) return {stretches_.size(), clock - end_};
    for (std::size_t k = 0; k < stretches_.size(); ++k) {
      const IdleStretch& s = stretches_[k];
      if (s.idle == 0 || clock >= s.start + s.length) continue;
      if (clock <= s.start) return {k, 0};
      const __int128 scaled = static_cast<__int128>(clock - s.start) * s.idle;
      return usable({k, static_cast<Picoseconds>(scaled / s.length)});
    }
    return {stretches_.size(), 0};
  }
  Picoseconds past_end(const Position& position) const {
    return position.stretch == stretches_.size() ? position.used : 0;
  }

  std::vector<IdleStretch> stretches_;  // in backward order
  std::vector<Sync> syncs_;             // in the order they are ready
  Picoseconds end_ = 0;                 // when the backward ends, on the group's clock
  std::size_t next_ = 0;
  Position at_;
  std::vector<LayerSyncExposed> exposed_;
};

}  // namespace

std::vector<LayerSyncExposed> expose_backward_syncs(const std::vector<LayerSyncWork>& layers) {
  return expose_group_backward_syncs({{0, layers}}).front();
}

std::vector<std::vector<LayerSyncExposed>> expose_group_backward_syncs(
    const std::vector<GroupBackward>& groups) {
  std::vector<GroupStream> streams(groups.begin(), groups.end());
  for (;;) {
    for (GroupStream& stream : streams) stream.run_own();
    const auto waiting = std::count_if(streams.begin(), streams.end(), [](const GroupStream& s) {
      return s.waits_for_the_groups();
    });
    if (waiting == 0) break;
    if (waiting != static_cast<std::ptrdiff_t>(streams.size())) {
      throw std::logic_error("expose_group_backward_syncs: the groups' syncs between them differ");
    }
    // A collective: it starts when the last group reaches it.
    Picoseconds last = 0;
    for (const GroupStream& stream : streams) {
      last = std::max(last, stream.clock_at(stream.next_start()));
    }
    for (GroupStream& stream : streams) stream.run_next(stream.next_start(), last);
  }
  std::vector<std::vector<LayerSyncExposed>> exposed;
  exposed.reserve(streams.size());
  for (const GroupStream& stream : streams) exposed.push_back(stream.exposed());
  return exposed;
}

}  // namespace topoep
