#include "harness/moe_layer.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

namespace topoep {

MoeLayer::MoeLayer(Comm& comm, const TopologyView& topology, const MoeDims& dims)
    : comm_(comm), topology_(topology), dims_(dims) {}

void MoeLayer::set_home(const Placement& placement) {
  home_.clear();
  for (ExpertId e = 0; e < placement.num_experts(); ++e) {
    if (placement.home_rank[e] == comm_.rank()) {
      home_.emplace(e, make_expert_weights(e, dims_.hidden, dims_.ffn, dims_.seed));
    }
  }
}

void MoeLayer::keep_replicas(const std::vector<ExpertId>& resident, int slots_per_rank) {
  std::map<ExpertId, ExpertWeights> kept;
  for (int slot = 0; slot < slots_per_rank && !resident.empty(); ++slot) {
    const ExpertId e = resident[static_cast<std::size_t>(comm_.rank()) * slots_per_rank + slot];
    auto it = replicas_.find(e);
    if (e != kNoExpert && it != replicas_.end()) kept.emplace(e, std::move(it->second));
  }
  replicas_ = std::move(kept);
}

const ExpertWeights& MoeLayer::weights(ExpertId expert) const {
  auto it = home_.find(expert);
  if (it != home_.end()) return it->second;
  it = replicas_.find(expert);
  if (it != replicas_.end()) return it->second;
  throw std::logic_error("rank " + std::to_string(comm_.rank()) + " holds no weights of expert " +
                         std::to_string(expert));
}

double MoeLayer::timed(const std::function<void()>& phase) {
  comm_.barrier();  // every phase starts together, as in the simulator
  const double start = comm_.now_us();
  phase();
  return comm_.now_us() - start;
}

// Each requested replica's weights from its home, in one all-to-all; returns its time.
double MoeLayer::fetch_replicas(const ReplicaRequests& moves, const Placement& placement) {
  const int me = comm_.rank(), R = comm_.size(), E = placement.num_experts();
  std::vector<std::vector<float>> weight_send(R);
  for (RankId rank = 0; rank < R; ++rank) {
    for (ExpertId e = 0; e < E; ++e) {
      if (!moves.requested(rank, e, E)) continue;
      if (placement.home_rank[e] != me) continue;
      const std::vector<float> packed = pack_weights(weights(e));
      weight_send[rank].insert(weight_send[rank].end(), packed.begin(), packed.end());
    }
  }
  return timed([&] {
    const std::vector<std::vector<float>> received = comm_.alltoallv(weight_send);
    const std::size_t size = static_cast<std::size_t>(3) * dims_.hidden * dims_.ffn;
    std::vector<std::size_t> offset(R, 0);
    for (const ExpertId e : moves.fetch) {  // ascending expert per home, as sent
      const RankId home = placement.home_rank[e];
      replicas_[e] = unpack_weights(received[home].data() + offset[home], dims_.hidden, dims_.ffn);
      offset[home] += size;
    }
  });
}

// Each broadcast expert's weights from its home to every rank (broadcast_experts()); returns
// the time of all of them.
double MoeLayer::broadcast_replicas(const ReplicaRequests& moves, const Placement& placement) {
  const int me = comm_.rank();
  const std::vector<ExpertId> experts = broadcast_experts(moves, placement, comm_.size());
  return timed([&] {
    for (const ExpertId e : experts) {
      const RankId home = placement.home_rank[e];
      std::vector<float> packed;
      if (home == me) packed = pack_weights(weights(e));
      comm_.broadcast(packed, home);
      if (home != me) replicas_[e] = unpack_weights(packed.data(), dims_.hidden, dims_.ffn);
    }
  });
}

LayerTimes MoeLayer::run(const Plan& plan, const Placement& placement, WeightDelivery delivery,
                         const RoutingCounts& counts, std::int64_t record,
                         std::vector<float>* out) {
  const int me = comm_.rank(), R = comm_.size(), h = dims_.hidden;
  LayerTimes times;

  // Replica weights: this rank's slots that hold an expert it lacks need its weights.
  const ReplicaRequests moves =
      request_replicas(comm_, plan, [&](ExpertId e) { return replicas_.count(e) > 0; });
  times.weights_us = delivery == WeightDelivery::kChainBroadcast
                         ? broadcast_replicas(moves, placement)
                         : fetch_replicas(moves, placement);
  times.replicas_received = static_cast<int>(moves.fetch.size());

  // Dispatch: this rank's assignments, per destination in canonical route order.
  const std::vector<Segment> segments = plan_segments(plan);
  std::vector<std::vector<float>> send(R);
  for (const Segment& s : segments) {
    if (s.src != me) continue;
    std::vector<float>& buffer = send[s.dst];
    const std::size_t at = buffer.size();
    buffer.resize(at + static_cast<std::size_t>(s.count) * h);
    for (TokenCount j = 0; j < s.count; ++j) {
      token_activation(dims_.seed, record, me, s.expert, s.first + j, h,
                       buffer.data() + at + static_cast<std::size_t>(j) * h);
    }
    if (s.dst != me) {
      (topology_.same_node(me, s.dst) ? times.nvlink_bytes_out : times.ib_bytes_out) +=
          s.count * h * static_cast<std::int64_t>(sizeof(float));
    }
  }
  std::vector<std::vector<float>> received;
  times.dispatch_us = timed([&] { received = comm_.alltoallv(send); });

  // Compute: per expert instance here, all its rows (sources ascending) in one GEMM.
  std::vector<std::vector<float>> results(R);
  for (RankId src = 0; src < R; ++src) results[src].resize(received[src].size());
  times.compute_us = timed([&] {
    std::map<ExpertId, std::vector<std::pair<RankId, std::size_t>>> rows;  // (src, offset)
    std::vector<std::size_t> offset(R, 0);
    for (const Segment& s : segments) {
      if (s.dst != me) continue;
      for (TokenCount j = 0; j < s.count; ++j) {
        rows[s.expert].push_back({s.src, offset[s.src]});
        offset[s.src] += h;
      }
    }
    for (const auto& [expert, places] : rows) {
      RowMatrix x(static_cast<Eigen::Index>(places.size()), h);
      for (std::size_t i = 0; i < places.size(); ++i) {
        std::copy_n(received[places[i].first].data() + places[i].second, h, x.row(i).data());
      }
      const RowMatrix y = expert_forward(weights(expert), x);
      for (std::size_t i = 0; i < places.size(); ++i) {
        std::copy_n(y.row(i).data(), h, results[places[i].first].data() + places[i].second);
      }
      times.tokens_processed += static_cast<std::int64_t>(places.size());
    }
  });

  // Combine: outputs go back; this rank reassembles its assignments in (expert, j) order.
  std::vector<std::vector<float>> returned;
  times.combine_us = timed([&] { returned = comm_.alltoallv(results); });
  const std::vector<TokenCount> expert_begin = expert_rows(counts, me);
  out->assign(static_cast<std::size_t>(expert_begin.back()) * h, 0.0f);
  std::vector<std::size_t> offset(R, 0);
  for (const Segment& s : segments) {
    if (s.src != me) continue;
    for (TokenCount j = 0; j < s.count; ++j) {
      std::copy_n(returned[s.dst].data() + offset[s.dst], h,
                  out->data() + static_cast<std::size_t>(expert_begin[s.expert] + s.first + j) * h);
      offset[s.dst] += h;
    }
  }
  return times;
}

}  // namespace topoep
