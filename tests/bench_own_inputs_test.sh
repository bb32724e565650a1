#!/usr/bin/env bash
# The benchmarks on your own inputs (bench/README.md): topoep_solver_bench times the solve of
# every layer of a `topoep solve --counts` file or of a trace's first records
# (TOPOEP_BENCH_COUNTS), sim_bench the replay of a whole trace through every planner
# (TOPOEP_BENCH_TRACE). Inputs that do not fit together exit 2 with a message naming the file
# and the variable or field, before anything is timed; a trace record that breaks mid-replay
# ends that benchmark with the reader's error and the program with exit 1.
set -uo pipefail
bench=$(realpath "$1")
topoep=$(realpath "$2")
sim_bench=$(realpath "$3")
source "$(dirname "$0")/expect.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# Two layers of 32 ranks x 64 experts (DeepSeek-V2-Lite's count), skewed toward low expert ids.
python3 - <<'PY'
import json
layers = [[[(9 - e % 9) * (r % 5 + 1) + (e == l) * 300 for e in range(64)] for r in range(32)]
          for l in range(2)]
json.dump({"layers": layers}, open("counts.json", "w"))
json.dump({"counts": [[1] * 64]}, open("one-rank.json", "w"))
PY
fast=(--benchmark_filter=OwnRouting --benchmark_min_time=0.01)

TOPOEP_BENCH_COUNTS=counts.json TOPOEP_BENCH_MODEL=deepseek-v2-lite TOPOEP_BENCH_SLOTS=2 \
  "$bench" "${fast[@]}" >out.txt 2>&1
expect "times the counts file's layers" 0 $?
expect_text "reports the solve" out.txt "BM_TopoepSolveOwnRouting"
expect_text "reports the moves" out.txt "moves="

"$topoep" trace synth --out trace --experts 64 --top-k 6 --ranks 64 --layers 2 --steps 1 \
  --tokens-per-rank 512 --seed 4 >/dev/null
TOPOEP_BENCH_COUNTS=trace TOPOEP_BENCH_TOPOLOGY=h100-8x8 TOPOEP_BENCH_MODEL=deepseek-v2-lite \
  "$bench" "${fast[@]}" >out.txt 2>&1
expect "times a trace's records" 0 $?
expect_text "reports the trace's solve" out.txt "BM_TopoepSolveOwnRouting"

mkdir not-a-trace
TOPOEP_BENCH_COUNTS=not-a-trace "$bench" "${fast[@]}" >out.txt 2>&1
expect "a directory without a trace" 2 $?
expect_text "says the directory is no trace" out.txt "not-a-trace: not a TopoEP trace: the directory has no index.json"

TOPOEP_BENCH_COUNTS=counts.json "$bench" "${fast[@]}" >out.txt 2>&1
expect "experts that the model lacks" 2 $?
expect_text "names the model variable" out.txt \
  "TOPOEP_BENCH_COUNTS=counts.json: TOPOEP_BENCH_MODEL: counts.json has 64 experts, model 'deepseek-v3' has 256"
expect_no_text "times nothing then" out.txt "BM_TopoepSolveOwnRouting"

TOPOEP_BENCH_COUNTS=one-rank.json TOPOEP_BENCH_MODEL=deepseek-v2-lite "$bench" "${fast[@]}" \
  >out.txt 2>&1
expect "ranks that the cluster lacks" 2 $?
expect_text "names the topology variable" out.txt \
  "TOPOEP_BENCH_TOPOLOGY: one-rank.json has 1 source ranks (rows), topology 'h800-4x8' has 32 GPUs"

TOPOEP_BENCH_COUNTS=counts.json TOPOEP_BENCH_MODEL=deepseek-v2-lite TOPOEP_BENCH_SLOTS=two \
  "$bench" "${fast[@]}" >out.txt 2>&1
expect "slots that are not a number" 2 $?
expect_text "names the slots variable" out.txt "TOPOEP_BENCH_SLOTS: must be a whole number"

TOPOEP_BENCH_COUNTS=counts.json TOPOEP_BENCH_MODEL=deepseek-v2-lite TOPOEP_BENCH_SLOTS=64 \
  "$bench" "${fast[@]}" >out.txt 2>&1
expect "more slots than fit a rank" 2 $?
expect_text "names the slots variable for them" out.txt \
  "TOPOEP_BENCH_SLOTS: 64 spare slots per rank is too many"

echo '{"counts": [[1, -2]]}' >negative.json
TOPOEP_BENCH_COUNTS=negative.json "$bench" "${fast[@]}" >out.txt 2>&1
expect "a negative count" 2 $?
expect_text "names the file and field" out.txt "negative.json: field 'counts[0][1]'"

TOPOEP_BENCH_COUNTS=missing.json "$bench" "${fast[@]}" >out.txt 2>&1
expect "a missing file" 2 $?
expect_text "names the missing file" out.txt "missing.json: cannot open the file"

# The replay on your own trace.
TOPOEP_BENCH_TRACE=trace TOPOEP_BENCH_TOPOLOGY=h100-8x8 TOPOEP_BENCH_MODEL=deepseek-v2-lite \
  TOPOEP_BENCH_SLOTS=2 "$sim_bench" --benchmark_filter=OwnTrace --benchmark_min_time=0.01 \
  >out.txt 2>&1
expect "replays the trace" 0 $?
for planner in topoep static eplb eplb-microbatch shadowing; do
  expect_text "replays it through $planner" out.txt "BM_ReplayOwnTrace/$planner "
done
expect_text "reports records per second" out.txt "records_per_s="

TOPOEP_BENCH_TRACE=trace "$sim_bench" --benchmark_filter=OwnTrace >out.txt 2>&1
expect "a trace the cluster does not fit" 2 $?
expect_text "names the topology" out.txt \
  "sim_bench: TOPOEP_BENCH_TRACE=trace: topology: 'h800-4x8' has 32 GPUs but the trace has 64 ranks"
expect_no_text "replays nothing then" out.txt "BM_ReplayOwnTrace"

TOPOEP_BENCH_TRACE=trace TOPOEP_BENCH_TOPOLOGY=h100-8x8 TOPOEP_BENCH_MODEL=deepseek-v2-lite \
  TOPOEP_BENCH_SLOTS=1000 "$sim_bench" --benchmark_filter=OwnTrace >out.txt 2>&1
expect "more slots than fit" 2 $?
expect_text "names the slots" out.txt "slots: must be in [0, 63]"

cp -r trace broken
chmod -R u+w broken
chunk=$(ls broken/*.safetensors | head -1)
truncate -s -1000 "$chunk"
TOPOEP_BENCH_TRACE=broken TOPOEP_BENCH_TOPOLOGY=h100-8x8 TOPOEP_BENCH_MODEL=deepseek-v2-lite \
  "$sim_bench" --benchmark_filter=OwnTrace/static --benchmark_min_time=0.01 >out.txt 2>&1
expect "a truncated chunk" 1 $?
expect_text "says where the trace breaks" out.txt "the file is truncated"

echo "$failures failure(s)"
[[ $failures == 0 ]]
