#pragma once
// A move of the TopoEP search and the total order that picks one (solver/README.md, "Tie-break
// rules").

#include <cstdint>

#include "solver/host_device.h"
#include "solver/plan.h"

namespace topoep {
namespace topoep_detail {

constexpr std::int32_t kHomeSlot = -1;  // an instance at the expert's home rank
constexpr std::int32_t kNewSlot = -2;   // a replica the move would create
constexpr RankId kStaleNode = -2;       // open_ranks of a node to be searched again
constexpr int kEmitRunBlock = 8;        // unreplicated routes emit_routes() writes at a time

// The searches a solve can run: from the static state; after seeding replicas
// (needs_seeded_run()); with the first replica of each rank's weights prepaid over the cheaper
// link class (needs_opened_run()) or over IB (needs_opened_ib_run()).
enum class RunKind { kPlain, kSeeded, kOpened, kOpenedIb };

struct Move {
  ExpertId expert = kNoExpert;
  RankId from_rank = -1;
  std::int32_t from_slot = kHomeSlot;
  RankId to_rank = -1;
  std::int32_t to_slot = kHomeSlot;  // kHomeSlot, an existing slot, or kNewSlot
  TokenCount tokens = 0;
  TokenCount source_tokens = 0;  // the origin instance's tokens before the move
  TokenCount ib_delta = 0;       // change in tokens crossing nodes
  Picoseconds gain = 0;
  bool ib_only = false;  // moves only tokens from other nodes (the IB levelling phase)
  // A source whose tokens transfer() takes before any other's (best_sender_shed()), or -1.
  RankId first_source = -1;

  TOPOEP_HOST_DEVICE bool valid() const { return tokens > 0; }
  // The total order that picks the move: larger gain; then less IB traffic; then an existing
  // instance before a new replica; then the busier origin instance (a replica slot is scarce:
  // spend it on the expert that can use it most); then the lower destination rank; then the
  // lower expert.
  TOPOEP_HOST_DEVICE bool better_than(const Move& other) const {
    if (!other.valid()) return valid();
    if (gain != other.gain) return gain > other.gain;
    if (ib_delta != other.ib_delta) return ib_delta < other.ib_delta;
    const bool is_new = to_slot == kNewSlot, other_new = other.to_slot == kNewSlot;
    if (is_new != other_new) return !is_new;
    if (source_tokens != other.source_tokens) return source_tokens > other.source_tokens;
    if (to_rank != other.to_rank) return to_rank < other.to_rank;
    return expert < other.expert;
  }
};

}  // namespace topoep_detail
}  // namespace topoep
