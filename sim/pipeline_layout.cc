#include "sim/pipeline_layout.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <numeric>

namespace topoep {

void LayerWorkProfile::add(const StepResult& step, int p, const CostModel& cost) {
  ++steps;
  const int last = step.records.empty() ? 0 : step.records.back().microbatch;
  for (const RecordResult& record : step.records) {
    const auto m = static_cast<std::size_t>(record.microbatch);
    if (layers.size() <= m) {
      layers.resize(m + 1);
      first_stage_extra.resize(m + 1);
      last_stage_extra.resize(m + 1);
    }
    if (layers[m].size() <= static_cast<std::size_t>(record.layer)) {
      layers[m].resize(record.layer + 1);
    }
    if (syncs.size() <= static_cast<std::size_t>(record.layer)) syncs.resize(record.layer + 1);
    // The gathers stay in the forward where the run's layout exposed them; the syncs run
    // after the stage's last operation, as in the replay.
    const LayerCost& priced = record.planners[p];
    const Picoseconds exposed = record.microbatch == last ? priced.step_end_syncs() : 0;
    syncs[record.layer] += exposed;
    add_record_work(cost, priced, 0, exposed, layers[m][record.layer], first_stage_extra[m],
                    last_stage_extra[m]);
  }
}

std::vector<std::vector<StageWork>> LayerWorkProfile::chunk_work(
    const std::vector<int>& layers_per_chunk) const {
  const std::size_t chunks = layers_per_chunk.size();
  std::vector<std::vector<StageWork>> work(chunks, std::vector<StageWork>(layers.size()));
  const Picoseconds per = std::max(1, steps);
  for (std::size_t m = 0; m < layers.size(); ++m) {
    std::size_t layer = 0;
    for (std::size_t s = 0; s < chunks; ++s) {
      StageWork sum;
      for (int i = 0; i < layers_per_chunk[s]; ++i, ++layer) sum += layers[m][layer];
      if (s == 0) sum += first_stage_extra[m];
      if (s + 1 == chunks) sum += last_stage_extra[m];
      work[s][m] = {sum.forward / per, sum.backward / per, sum.weight_grad / per,
                    sum.forward_hidden / per, sum.backward_hidden / per};
    }
  }
  return work;
}

std::vector<StageEnds> LayerWorkProfile::stage_ends(const std::vector<int>& layers_per_chunk,
                                                    const SimOptions& options) const {
  std::vector<StageEnds> ends(static_cast<std::size_t>(options.pipeline_stages));
  const Picoseconds per = std::max(1, steps);
  std::size_t layer = 0;
  for (std::size_t c = 0; c < layers_per_chunk.size(); ++c) {
    Picoseconds tail = 0;
    for (int i = 0; i < layers_per_chunk[c]; ++i, ++layer) {
      if (layer < syncs.size()) tail += syncs[layer];
    }
    ends[options.chunk_stage(static_cast<int>(c))].tail += tail / per;
  }
  return ends;
}

namespace {

// cost.options() with `layers_per_chunk` over `stages` stages.
SimOptions layout_options(const std::vector<int>& layers_per_chunk, int stages,
                          const CostModel& cost) {
  SimOptions options = cost.options();
  options.pipeline_stages = stages;
  if (options.pipeline_schedule == PipelineSchedule::kOneFOneB) {
    options.virtual_stages = static_cast<int>(layers_per_chunk.size()) / stages;
  }
  return options;
}

}  // namespace

int pipeline_layout_activations(const std::vector<int>& layers_per_chunk, int stages,
                                const CostModel& cost, int microbatches) {
  const std::vector<int> peaks = pipeline_peak_activations(
      layout_options(layers_per_chunk, stages, cost), layers_per_chunk, microbatches);
  return *std::max_element(peaks.begin(), peaks.end());
}

std::vector<Bytes> pipeline_layout_memory(const std::vector<int>& layers_per_chunk, int stages,
                                          const CostModel& cost, int microbatches, int slots,
                                          Bytes bytes_per_layer_microbatch, Bytes token_buffers) {
  const SimOptions options = layout_options(layers_per_chunk, stages, cost);
  const int chunks = static_cast<int>(layers_per_chunk.size());
  const PipelineTimes order = schedule_order(options, chunks, microbatches);
  const std::vector<int> peaks = peak_activations(order, layers_per_chunk);
  std::vector<Bytes> memory;
  std::vector<StageMemory> stage =
      resident_stage_memory(cost, layers_per_chunk, stages, slots, order);
  for (int s = 0; s < stages; ++s) {
    stage[s].expert_activations = peaks[s] * bytes_per_layer_microbatch;
    stage[s].token_buffers = token_buffers;
    memory.push_back(stage[s].total());
  }
  return memory;
}

Bytes activation_bytes_per_layer_microbatch(const std::vector<StageMemory>& stages,
                                            const std::vector<int>& peaks) {
  Bytes most = 0;
  for (std::size_t s = 0; s < stages.size() && s < peaks.size(); ++s) {
    if (peaks[s] <= 0) continue;
    most = std::max(most, (stages[s].expert_activations + peaks[s] - 1) / peaks[s]);
  }
  return most;
}

Picoseconds predicted_pipeline_step(const LayerWorkProfile& profile,
                                    const std::vector<int>& layers_per_chunk, int stages,
                                    const CostModel& cost) {
  const Picoseconds handover = stages > 1 ? cost.pipeline_handover_ps() : 0;
  const SimOptions options = layout_options(layers_per_chunk, stages, cost);
  const PipelineTimes span =
      run_pipeline_schedule(options, profile.chunk_work(layers_per_chunk), handover,
                            profile.stage_ends(layers_per_chunk, options));
  return span.makespan + cost.pipeline_optimizer_ps(layers_per_chunk, stages);
}

namespace {

// The predicted step of a layout of chunks.
using Predict = std::function<Picoseconds(const std::vector<int>&)>;

// The split whose busiest chunk has the least total work over the run (1F1B's steady state
// runs at the busiest stage's pace): a descent's third start. Ties: the earliest cuts.
std::vector<int> evened_total_work(const LayerWorkProfile& profile, int stages) {
  const int n = profile.layers.empty() ? 0 : static_cast<int>(profile.layers.front().size());
  std::vector<Picoseconds> prefix(static_cast<std::size_t>(n) + 1, 0);
  Picoseconds first = 0, last = 0;
  for (std::size_t m = 0; m < profile.layers.size(); ++m) {
    for (int l = 0; l < n; ++l) {
      prefix[l + 1] += profile.layers[m][l].forward + profile.layers[m][l].backward;
    }
    first += profile.first_stage_extra[m].forward + profile.first_stage_extra[m].backward;
    last += profile.last_stage_extra[m].forward + profile.last_stage_extra[m].backward;
  }
  std::partial_sum(prefix.begin(), prefix.end(), prefix.begin());
  const auto extra = [&](int s) { return (s == 0 ? first : 0) + (s == stages - 1 ? last : 0); };
  constexpr Picoseconds kNone = std::numeric_limits<Picoseconds>::max();
  // best[s][i]: the least busiest-stage work of the first i layers in stages 0..s; cut[s][i]:
  // the first layer of stage s there, the earliest optimal one.
  std::vector<std::vector<Picoseconds>> best(stages, std::vector<Picoseconds>(n + 1, kNone));
  std::vector<std::vector<int>> cut(stages, std::vector<int>(n + 1, 0));
  for (int i = 1; i <= n; ++i) best[0][i] = prefix[i] + extra(0);
  for (int s = 1; s < stages; ++s) {
    for (int i = s + 1; i <= n; ++i) {
      for (int j = s; j < i; ++j) {
        if (best[s - 1][j] == kNone) continue;
        const Picoseconds here = std::max(best[s - 1][j], prefix[i] - prefix[j] + extra(s));
        if (here < best[s][i]) {
          best[s][i] = here;
          cut[s][i] = j;
        }
      }
    }
  }
  std::vector<int> counts(static_cast<std::size_t>(stages), 0);
  int end = n;
  for (int s = stages - 1; s > 0; --s) {
    counts[s] = end - cut[s][end];
    end = cut[s][end];
  }
  counts[0] = end;
  return counts;
}

// Up to this many chunks a descent also moves a layer between chunks apart.
constexpr std::size_t kFarMoveChunks = 64;

// Moves of one boundary (between chunks b and b + 1) by 1 or 2 layers either way, and (up to
// kFarMoveChunks chunks) of one layer from any chunk to any other further away (every
// boundary between them by one), keeping every chunk at least one layer, while the best of
// them shortens the predicted step.
std::pair<std::vector<int>, Picoseconds> descend(std::vector<int> layers, const Predict& predict) {
  Picoseconds step = predict(layers);
  for (bool improved = true; improved;) {
    improved = false;
    std::vector<int> best_layers;
    Picoseconds best_step = step;
    const auto consider = [&](std::vector<int> next) {
      const Picoseconds candidate = predict(next);
      if (candidate < best_step) {
        best_step = candidate;
        best_layers = std::move(next);
      }
    };
    for (std::size_t b = 0; b + 1 < layers.size(); ++b) {
      for (const int shift : {-1, 1, -2, 2}) {
        std::vector<int> next = layers;
        next[b] += shift;  // a positive shift moves layers from chunk b + 1 into chunk b
        next[b + 1] -= shift;
        if (next[b] < 1 || next[b + 1] < 1) continue;
        consider(std::move(next));
      }
    }
    // Where the shortest layout holds a chunk boundary far from here (interleaved chunks of
    // one stage, DualPipe's mirrored pairs), a layer moved between distant chunks reaches it
    // in one move instead of several that each lengthen the step.
    for (std::size_t from = 0; layers.size() <= kFarMoveChunks && from < layers.size(); ++from) {
      for (std::size_t to = 0; to < layers.size(); ++to) {
        if (to + 1 == from || to == from || to == from + 1 || layers[from] < 2) continue;
        std::vector<int> next = layers;
        --next[from];
        ++next[to];
        consider(std::move(next));
      }
    }
    if (!best_layers.empty()) {
      layers = std::move(best_layers);
      step = best_step;
      improved = true;
    }
  }
  return {layers, step};
}

// C(n, k), or more than `limit` where it exceeds it.
long long layouts_up_to(int n, int k, long long limit) {
  long long count = 1;
  for (int i = 1; i <= k; ++i) {
    count = count * (n - k + i) / i;  // exact: a product of i consecutive integers over i!
    if (count > limit) return limit + 1;
  }
  return count;
}

// Every layout in lexicographic order; the first of the shortest.
std::vector<int> best_of_every_layout(int layers, int stages, const Predict& predict) {
  std::vector<int> counts(static_cast<std::size_t>(stages), 1), best;
  Picoseconds best_step = 0;
  const std::function<void(int, int)> fill = [&](int stage, int left) {
    if (stage == stages - 1) {
      counts[stage] = left;
      const Picoseconds step = predict(counts);
      if (best.empty() || step < best_step) {
        best = counts;
        best_step = step;
      }
      return;
    }
    for (int n = 1; n <= left - (stages - stage - 1); ++n) {
      counts[stage] = n;
      fill(stage + 1, left - n);
    }
  };
  fill(0, layers);
  return best;
}

}  // namespace

std::vector<int> advised_stage_layers(const LayerWorkProfile& profile,
                                      const std::vector<int>& start, int stages,
                                      const CostModel& cost, long long exhaustive_limit,
                                      int max_activations, const LayoutExcess& excess) {
  const int chunks = static_cast<int>(start.size());
  const int layers = std::accumulate(start.begin(), start.end(), 0);
  const int microbatches = static_cast<int>(profile.layers.size());
  const auto too_many_activations = [&](const std::vector<int>& layout) {
    return max_activations > 0 &&
           pipeline_layout_activations(layout, stages, cost, microbatches) > max_activations;
  };
  // A layout over a cap is never shorter than one within them, nor than the start; over the
  // activations cap, never shorter than one only over `excess`'s, which rank by how far over.
  constexpr Picoseconds kOverCap = std::numeric_limits<Picoseconds>::max();
  constexpr Picoseconds kOverExcess = Picoseconds{1} << 62;
  const auto over = [&](const std::vector<int>& layout) -> Picoseconds {
    if (too_many_activations(layout)) return kOverCap;
    const Bytes by = excess ? excess(layout) : 0;
    return by > 0 ? kOverExcess + std::min<Bytes>(by, kOverExcess - 1) : 0;
  };
  const Predict predict = [&](const std::vector<int>& layout) {
    const Picoseconds beyond = over(layout);
    return beyond > 0 ? beyond : predicted_pipeline_step(profile, layout, stages, cost);
  };
  const auto within_cap = [&](std::vector<int> layout) {
    return over(layout) > 0 ? std::vector<int>{} : layout;
  };
  if (layouts_up_to(layers - 1, chunks - 1, exhaustive_limit) <= exhaustive_limit) {
    return within_cap(best_of_every_layout(layers, chunks, predict));
  }
  auto best = descend(start, predict);
  for (const std::vector<int>& other :
       {stage_layer_counts(layers, chunks, {}), evened_total_work(profile, chunks)}) {
    auto found = descend(other, predict);
    if (found.second < best.second) best = std::move(found);
  }
  // Kicks out of a local minimum: one boundary moved by 3 or 4 layers, then a descent, kept
  // where it ends shorter; again from there until no kick helps (up to 64 chunks: the kicks
  // grow with the boundaries).
  for (bool improved = chunks <= 64; improved;) {
    improved = false;
    for (std::size_t b = 0; b + 1 < best.first.size() && !improved; ++b) {
      for (const int shift : {-3, 3, -4, 4}) {
        std::vector<int> kicked = best.first;
        kicked[b] += shift;
        kicked[b + 1] -= shift;
        if (kicked[b] < 1 || kicked[b + 1] < 1) continue;
        auto found = descend(std::move(kicked), predict);
        if (found.second < best.second) {
          best = std::move(found);
          improved = true;
          break;
        }
      }
    }
  }
  return within_cap(best.first);
}

}  // namespace topoep
