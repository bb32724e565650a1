#include "traces/unit_packing.h"

#include <algorithm>
#include <numeric>

#include "solver/input_error.h"
#include "traces/splitmix64.h"

namespace topoep {

PackingMethod parse_packing_method(const std::string& name) {
  if (name == "contiguous") return PackingMethod::kContiguous;
  if (name == "round-robin") return PackingMethod::kRoundRobin;
  if (name == "random") return PackingMethod::kRandom;
  throw InputError("packing", "unknown method '" + name + "' (contiguous, round-robin, random)");
}

const char* to_string(PackingMethod method) {
  switch (method) {
    case PackingMethod::kContiguous:
      return "contiguous";
    case PackingMethod::kRoundRobin:
      return "round-robin";
    case PackingMethod::kRandom:
      return "random";
  }
  return "unknown";
}

std::vector<int> unit_order(int num_units, PackingMethod method, int bootstrap_units,
                            std::uint64_t seed) {
  SplitMix64 random(seed);
  std::vector<int> order;
  if (bootstrap_units > 0) {
    for (int i = 0; i < bootstrap_units; ++i)
      order.push_back(static_cast<int>(random.below(static_cast<std::uint64_t>(num_units))));
  } else {
    order.resize(num_units);
    std::iota(order.begin(), order.end(), 0);
  }
  if (method == PackingMethod::kRandom) {
    for (int i = static_cast<int>(order.size()) - 1; i > 0; --i) {
      std::swap(order[i], order[random.below(static_cast<std::uint64_t>(i) + 1)]);
    }
  }
  return order;
}

template <typename Visit>
void UnitPacker::walk(const TokenUnits& layer, Cursor& cursor, std::size_t stride,
                      std::size_t count, Visit&& visit) const {
  while (count > 0) {
    const int unit = unit_at(cursor.index);
    const std::size_t size = layer.unit_size(unit);
    const std::size_t end = std::min(size, cursor.offset + count);
    visit(layer.experts + layer.unit_begin(unit) + cursor.offset, end - cursor.offset);
    count -= end - cursor.offset;
    cursor.offset = end;
    if (cursor.offset == size) {
      cursor.index += stride;
      cursor.offset = 0;
    }
  }
}

UnitPacker::UnitPacker(const TokenUnits& layer, std::vector<int> order, PackingMethod method,
                       int top_k, int num_ranks, int tokens_per_rank)
    : order_(std::move(order)),
      positions_(order_.empty() ? static_cast<std::size_t>(layer.num_units()) : order_.size()),
      round_robin_(method == PackingMethod::kRoundRobin),
      num_ranks_(num_ranks),
      ids_per_rank_(static_cast<std::size_t>(tokens_per_rank) * top_k) {
  if (top_k < 1) throw InputError("top_k", "must be at least 1");
  if (tokens_per_rank < 1) throw InputError("tokens_per_rank", "must be at least 1");
  if (num_ranks < 1) throw InputError("num_ranks", "must be at least 1");
  // Walks one stream of units (every `stride`-th of the order from `first`) and notes where each
  // run of `run` ids starts; returns how many whole runs it holds.
  auto runs = [&](std::size_t first, std::size_t stride, std::size_t run,
                  std::vector<Cursor>& starts) {
    std::size_t total = 0;
    for (std::size_t i = first; i < positions_; i += stride) total += layer.unit_size(unit_at(i));
    const std::size_t whole = total / run;
    Cursor cursor{first, 0};
    for (std::size_t r = 0; r < whole; ++r) {
      starts.push_back(cursor);
      walk(layer, cursor, stride, run, [](const ExpertId*, std::size_t) {});
    }
    return static_cast<int>(whole);
  };
  if (!round_robin_) {
    // Whole tokens of the stream, in microbatches of R x T tokens.
    microbatches_ = runs(0, 1, ids_per_rank_ * static_cast<std::size_t>(num_ranks), starts_);
    return;
  }
  std::vector<std::vector<Cursor>> by_rank(static_cast<std::size_t>(num_ranks));
  microbatches_ = -1;
  for (int rank = 0; rank < num_ranks; ++rank) {
    const int whole = runs(static_cast<std::size_t>(rank), static_cast<std::size_t>(num_ranks),
                           ids_per_rank_, by_rank[rank]);
    microbatches_ = microbatches_ < 0 ? whole : std::min(microbatches_, whole);
  }
  for (int m = 0; m < microbatches_; ++m) {
    for (int rank = 0; rank < num_ranks; ++rank) starts_.push_back(by_rank[rank][m]);
  }
}

RoutingCounts UnitPacker::pack(const TokenUnits& layer, int microbatch, int num_experts) const {
  std::vector<TokenCount> values(static_cast<std::size_t>(num_ranks_) * num_experts, 0);
  const std::size_t stride = round_robin_ ? static_cast<std::size_t>(num_ranks_) : 1;
  // Contiguous: one run through the microbatch, rank after rank. Round-robin: each rank's own.
  Cursor cursor = starts_[round_robin_ ? static_cast<std::size_t>(microbatch) * num_ranks_
                                       : static_cast<std::size_t>(microbatch)];
  for (int rank = 0; rank < num_ranks_; ++rank) {
    if (round_robin_) cursor = starts_[static_cast<std::size_t>(microbatch) * num_ranks_ + rank];
    TokenCount* const row = &values[static_cast<std::size_t>(rank) * num_experts];
    walk(layer, cursor, stride, ids_per_rank_,
         [&](const ExpertId* ids, std::size_t n) { count_ids(ids, n, num_experts, row); });
  }
  return RoutingCounts(num_ranks_, num_experts, std::move(values));
}

void UnitPacker::count_ids(const ExpertId* ids, std::size_t n, int num_experts, TokenCount* row) {
  for (std::size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= num_experts) {  // the readers check ids: a backstop
      throw InputError("units", "expert id " + std::to_string(ids[i]) + " is out of range");
    }
    ++row[ids[i]];
  }
}

void UnitPacker::pack_all(const std::vector<TokenUnits>& layers, int num_experts,
                          TokenCount* counts, ProgressDisplay display) const {
  if (layers.empty()) return;
  const TokenUnits& units = layers.front();  // every layer's units have its sizes
  // Position i of the order is the (i / stride)-th unit of stream i % stride: the one stream,
  // or rank i % R's under round-robin. Whole microbatches take each stream's first `kept` ids.
  const std::size_t stride = round_robin_ ? static_cast<std::size_t>(num_ranks_) : 1;
  const std::size_t rows_a_stream = round_robin_ ? 1 : static_cast<std::size_t>(num_ranks_);
  const std::size_t kept = static_cast<std::size_t>(microbatches_) * rows_a_stream * ids_per_rank_;
  // Where each position starts in its stream, as sparse prefix sums: the offset of every
  // kMark-th position of a stream, the rest summed from the last mark (a few sizes, not 8
  // bytes a position).
  constexpr std::size_t kMark = 16;
  const std::size_t per_stream = (positions_ + stride - 1) / stride;
  std::vector<std::size_t> marks(((per_stream + kMark - 1) / kMark) * stride);
  std::vector<std::size_t> running(stride, 0);
  for (std::size_t i = 0; i < positions_; ++i) {
    const std::size_t stream = i % stride, q = i / stride;
    if (q % kMark == 0) marks[q / kMark * stride + stream] = running[stream];
    running[stream] += units.unit_size(unit_at(i));
  }
  const auto start_of = [&](std::size_t i) {
    const std::size_t stream = i % stride, q = i / stride;
    std::size_t offset = marks[q / kMark * stride + stream];
    for (std::size_t t = q / kMark * kMark; t < q; ++t) {
      offset += units.unit_size(unit_at(t * stride + stream));
    }
    return offset;
  };
  // The positions of each unit, ascending: a counting sort of the order.
  const int num_units = units.num_units();
  std::vector<int> first(static_cast<std::size_t>(num_units) + 1, 0);
  for (std::size_t i = 0; i < positions_; ++i) ++first[unit_at(i) + 1];
  for (int u = 0; u < num_units; ++u) first[u + 1] += first[u];
  std::vector<int> by_unit(positions_);
  {
    std::vector<int> next(first.begin(), first.end() - 1);
    for (std::size_t i = 0; i < positions_; ++i) by_unit[next[unit_at(i)]++] = static_cast<int>(i);
  }
  const std::size_t matrix = static_cast<std::size_t>(num_ranks_) * num_experts;
  const std::size_t layer_counts = static_cast<std::size_t>(microbatches_) * matrix;
  ProgressBar bar("units counted", display == ProgressDisplay::kTerminal ? num_units : 0);
  for (int u = 0; u < num_units; ++u) {
    if (u % 65536 == 0) bar.update(u);
    const std::size_t begin = units.unit_begin(u), size = units.unit_size(u);
    for (int k = first[u]; k < first[u + 1]; ++k) {
      const std::size_t i = static_cast<std::size_t>(by_unit[k]);
      // The unit's ids from its start on, cut where its stream passes from one rank's T tokens
      // of a microbatch to the next's; each piece counted in every layer.
      std::size_t offset = start_of(i);
      for (std::size_t done = 0; done < size && offset < kept;) {
        const std::size_t row = offset / ids_per_rank_;  // of the stream
        const std::size_t n = std::min(size - done, (row + 1) * ids_per_rank_ - offset);
        const std::size_t microbatch = row / rows_a_stream;
        const std::size_t rank = round_robin_ ? i % stride : row % rows_a_stream;
        TokenCount* const at =
            counts + microbatch * matrix + rank * static_cast<std::size_t>(num_experts);
        for (std::size_t l = 0; l < layers.size(); ++l) {
          count_ids(layers[l].experts + begin + done, n, num_experts, at + l * layer_counts);
        }
        done += n;
        offset += n;
      }
    }
  }
  bar.update(num_units);
}

}  // namespace topoep
