#include "sim/backward_sync.h"

#include <algorithm>
#include <deque>

namespace topoep {
namespace {

// A sync waiting on the stream: which layer's, which of its fields, and how much of it is left.
struct PendingSync {
  int layer = 0;
  Picoseconds LayerSyncExposed::*field = nullptr;
  Picoseconds left = 0;
};

class SyncStream {
 public:
  void enqueue(int layer, Picoseconds LayerSyncExposed::*field, Picoseconds time) {
    if (time > 0) pending_.push_back({layer, field, time});
  }

  // Runs the waiting syncs, first ready first, for `idle` picoseconds.
  void run(Picoseconds idle) {
    while (idle > 0 && !pending_.empty()) {
      PendingSync& front = pending_.front();
      const Picoseconds done = std::min(idle, front.left);
      front.left -= done;
      idle -= done;
      if (front.left == 0) pending_.pop_front();
    }
  }

  // What is left when the backward ends, onto each sync's own layer and field.
  void expose(std::vector<LayerSyncExposed>& exposed) const {
    for (const PendingSync& sync : pending_) exposed[sync.layer].*sync.field += sync.left;
  }

 private:
  std::deque<PendingSync> pending_;
};

}  // namespace

std::vector<LayerSyncExposed> expose_backward_syncs(const std::vector<LayerSyncWork>& layers) {
  const int num_layers = static_cast<int>(layers.size());
  SyncStream stream;
  for (int layer = num_layers - 1; layer >= 0; --layer) {
    const LayerSyncWork& work = layers[layer];
    stream.run(work.expert_compute_idle);
    // The layer's expert gradients are complete once its MoE backward ends: the replicas'
    // reach their homes, then the homes sync with the other groups.
    stream.enqueue(layer, &LayerSyncExposed::replica_reduction, work.replica_reduction);
    stream.enqueue(layer, &LayerSyncExposed::expert_sync, work.expert_sync);
    stream.run(work.attention_idle);
    // Its dense gradients are complete once its attention backward ends.
    stream.enqueue(layer, &LayerSyncExposed::dense_sync, work.dense_sync);
    stream.run(work.outside_idle);
  }
  std::vector<LayerSyncExposed> exposed(num_layers);
  stream.expose(exposed);
  return exposed;
}

}  // namespace topoep
