#!/usr/bin/env bash
# The harness in host mode under mpirun, 4 ranks on a 2 x 2 topology: identical plan hashes,
# outputs equal to the static plan's (TopoEP, EPLB per microbatch, whose replicas move, and
# shadowing, whose shadows are broadcast),
# a deliberately perturbed rank caught and named, the simulator's per-layer schema, and the
# measurement -> calibrate -> compare loop.
# Usage: harness_test.sh TOPOEP TOPOEP_HARNESS
set -uo pipefail
topoep=$(realpath "$1")
harness=$(realpath "$2")
work=${TEST_TMPDIR:-$(mktemp -d)}
source "$(dirname "$0")/expect.sh"
export PATH=/usr/bin:$PATH HOME=$work
# Under --config=asan, LeakSanitizer stays off for the MPI processes only: OpenMPI's own
# allocations (hwloc, components it dlopens) outlive MPI_Finalize. ASan and UBSan stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpi=(mpirun --allow-run-as-root --oversubscribe -np 4)

"$topoep" topology show h800-4x8 --json >"$work/topo.json"
python3 - "$work" <<'PY'
import json, sys
d = sys.argv[1]
t = json.load(open(d + "/topo.json"))
t["name"], t["nodes"], t["gpus_per_node"] = "host-2x2", 2, 2
json.dump(t, open(d + "/topo.json", "w"))
# DeepSeek-V3's expert sizes with 8 experts: the planner sees real costs, the harness runs
# the FFN at --hidden/--ffn.
json.dump({"name": "v3-8", "source": "test", "num_experts": 8, "top_k": 2, "hidden_size": 7168,
           "expert_ffn_size": 2048, "moe_layers": 2, "dispatch_bytes": 1,
           "dispatch_scale_block": 128, "combine_bytes": 2, "weight_bytes": 2,
           "dense_params_per_layer": 187105280, "tokens_per_rank": 8192},
          open(d + "/model.json", "w"))
PY
"$topoep" trace synth --out "$work/trace" --ranks 4 --gpus-per-node 2 --experts 8 --top-k 2 \
  --layers 2 --steps 2 --tokens-per-rank 8192 --hot-ratio 3 >/dev/null
expect "small trace" 0 $?
common=(--trace "$work/trace" --topology "$work/topo.json" --model "$work/model.json" --hidden 32 --ffn 16)

"${mpi[@]}" "$harness" run "${common[@]}" --out "$work/measured" >"$work/out" 2>&1
expect "topoep on 4 ranks: hashes identical, outputs equal the static plan's" 0 $?
expect_text "the run says what it checked" "$work/out" "plan hashes identical, outputs equal"
[[ $(wc -l <"$work/measured/per_layer.csv") == 9 && $(wc -l <"$work/measured/per_rank.csv") == 33 ]]
expect "one row per record, and per record and rank" 0 $?
head -1 "$work/measured/per_layer.csv" >"$work/header"
"$topoep" simulate "${common[@]:0:6}" --planners topoep --out "$work/sim" >/dev/null 2>&1
expect "the simulator replays the same trace" 0 $?
cmp -s "$work/header" <(head -1 "$work/sim/per_layer.csv")
expect "measurements share the simulator's per-layer schema" 0 $?
"$topoep" compare --sim "$work/sim" --measured "$work/measured" >"$work/out" 2>&1
expect "compare exits 0" 0 $?
expect_text "compare reports dispatch" "$work/out" "dispatch_us"
expect_text "and the MoE forward, what the harness measures" "$work/out" "moe_forward_us"
expect_no_text "a simulation without overlap needs no overlap note" "$work/out" "--a2a-overlap"
expect_text "the simulator and the harness ran the same plans" "$work/out" "Same plan in both: 8 of 8 records"
expect_no_text "a per-assignment simulation needs no dispatcher note" "$work/out" "DeepEP"
"$topoep" simulate "${common[@]:0:6}" --planners topoep --dispatcher deepep --out "$work/sim-deepep" \
  >/dev/null 2>&1
"$topoep" compare --sim "$work/sim-deepep" --measured "$work/measured" >"$work/out" 2>&1
expect "compare takes a DeepEP simulation" 0 $?
expect_text "and says the harness dispatches per assignment" "$work/out" \
  "the harness sends every token-expert assignment on its own"
"$topoep" simulate "${common[@]:0:6}" --planners topoep --a2a-overlap 1 --out "$work/sim-overlap" \
  >/dev/null 2>&1
"$topoep" compare --sim "$work/sim-overlap" --measured "$work/measured" >"$work/out" 2>&1
expect "compare takes an overlapped simulation" 0 $?
expect_text "and says the harness runs every all-to-all on the critical path" "$work/out" \
  "simulate with --a2a-overlap 0 to calibrate"

# 10 experts on 4 GPUs: refused as the simulator refuses them, run with --uneven-homes.
"$topoep" trace synth --out "$work/trace10" --ranks 4 --gpus-per-node 2 --experts 10 --top-k 2 \
  --layers 1 --steps 1 --tokens-per-rank 512 >/dev/null
edit_json "$work/model.json" "$work/model10.json" 'd["num_experts"] = 10'
uneven=(--trace "$work/trace10" --topology "$work/topo.json" --model "$work/model10.json" --hidden 32 --ffn 16)
"${mpi[@]}" "$harness" run "${uneven[@]}" >"$work/out" 2>&1
expect "10 experts on 4 GPUs are refused without --uneven-homes (exit 2, bad input)" 2 $?
expect_text "the refusal names the flag" "$work/out" "would home 3 experts on the first 2 GPUs and 2 on the others"
"${mpi[@]}" "$harness" run "${uneven[@]}" --uneven-homes >"$work/out" 2>&1
expect "with --uneven-homes: hashes identical, outputs equal the static plan's" 0 $?

"${mpi[@]}" "$harness" run "${common[@]}" --planner eplb-microbatch --out "$work/eplb" >"$work/out" 2>&1
expect "eplb-microbatch: replicas move and outputs still agree" 0 $?
python3 - "$work/eplb/per_layer.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sys.exit(0 if sum(int(r["new_replicas"]) for r in rows) > 0 else "no replica moved")
PY
expect "replica weights moved between ranks" 0 $?
"$topoep" compare --sim "$work/sim" --measured "$work/eplb" >"$work/out" 2>&1
expect "compare refuses a planner the simulation did not run" 2 $?
expect_text "the record is named" "$work/out" "record (step,microbatch,layer,planner) 0,0,0,eplb-microbatch is not in"

"${mpi[@]}" "$harness" run "${common[@]}" --planner shadowing --out "$work/shadowing" >"$work/out" 2>&1
expect "shadowing: shadows broadcast to every rank and outputs still agree" 0 $?
"$topoep" simulate "${common[@]:0:6}" --planners shadowing --out "$work/sim-shadowing" >/dev/null 2>&1
expect "the simulator replays shadowing on the same trace" 0 $?
python3 - "$work/shadowing/per_layer.csv" "$work/sim-shadowing/per_layer.csv" <<'PY'
import csv, sys
def moved(path):
    return {(r["step"], r["microbatch"], r["layer"]): int(r["new_replicas"])
            for r in csv.DictReader(open(path))}
measured, simulated = moved(sys.argv[1]), moved(sys.argv[2])
# A shadow is on every rank but its home (3 of 4), and is broadcast again on every microbatch:
# the harness moves what the simulator charges, record by record.
assert measured == simulated, (measured, simulated)
assert max(measured.values()) > 0 and all(n % 3 == 0 for n in measured.values()), measured
PY
expect "shadows moved on every record, each to the 3 ranks that are not its home, as simulated" 0 $?

"${mpi[@]}" "$harness" run "${common[@]}" --perturb-rank 2 >"$work/out" 2>&1
expect "a perturbed rank stops the run with exit 3" 3 $?
expect_text "the record and the rank are named" "$work/out" "record 0 (step 0, microbatch 0, layer 0): plan hashes differ"
expect_text "rank 2 is named" "$work/out" "rank 2 0x"
"${mpi[@]}" "$harness" run "${common[@]}" --perturb-rank 4 >"$work/out" 2>&1
expect "a perturbed rank that does not exist is bad input (the check would not happen)" 2 $?
expect_text "the flag and the ranks are named" "$work/out" "--perturb-rank: must be a rank, 0 to 3 (got 4)"
"${mpi[@]}" "$harness" run --trace "$work/trace" --topology "$work/topo.json" \
  --model "$work/model.json" --hidden 0 --ffn 16 >"$work/out" 2>&1
expect "a zero hidden size is bad input (empty outputs would compare equal)" 2 $?

"${mpi[@]}" "$harness" run --trace "$work/trace" --topology h800-4x8 --model "$work/model.json" \
  >"$work/out" 2>&1
expect "a topology with another GPU count exits 2" 2 $?
expect_text "the topology and both GPU counts are named" "$work/out" "rank 0: --topology: 'h800-4x8' has 32 GPUs but mpirun started 4 ranks; no preset has 4 GPUs: pass a file"
"${mpi[@]}" "$harness" run --trace "$work/trace" --topology h800-4x8 --gpus-per-node 2 \
  --model "$work/model.json" >"$work/out" 2>&1
expect "a reshape to another GPU count exits 2" 2 $?
expect_text "the reshape that fits is named" "$work/out" "rank 0: --topology: 'h800-4x2' has 8 GPUs but mpirun started 4 ranks; on 2 of its nodes it fits (--nodes 2)"
"${mpi[@]}" "$harness" run --trace "$work/trace" --topology h800-4x8 --nodes 2 --gpus-per-node 2 \
  --model "$work/model.json" --hidden 32 --ffn 16 --out "$work/reshaped" >"$work/out" 2>&1
expect "the preset reshaped to the ranks runs" 0 $?
cmp -s <(cut -d, -f1-4,23 "$work/measured/per_layer.csv") <(cut -d, -f1-4,23 "$work/reshaped/per_layer.csv")
expect "and plans as the same cluster written as a file" 0 $?
sed 's/"top_k": 2/"top_k": 4/' "$work/model.json" >"$work/model-top4.json"
"${mpi[@]}" "$harness" run --trace "$work/trace" --topology "$work/topo.json" \
  --model "$work/model-top4.json" >"$work/out" 2>&1
expect "a model with another top-k exits 2" 2 $?
expect_text "the model file and both top-ks are named" "$work/out" "rank 0: model.top_k: 'v3-8' ($work/model-top4.json) routes each token to 4 experts but the trace to 2"

"${mpi[@]}" "$harness" microbench --topology "$work/topo.json" --out "$work/micro" >"$work/out" 2>&1
expect "microbench" 0 $?
"$topoep" calibrate --measurements "$work/micro" --topology "$work/topo.json" --out "$work/calibrated.json" >"$work/out" 2>&1
expect "calibrate fits the measurements" 0 $?
"$topoep" topology validate "$work/calibrated.json" >"$work/out" 2>&1
expect "the calibrated topology is valid" 0 $?
[[ -s $work/micro/hbm_samples.csv ]]
expect "microbench times memory copies" 0 $?
expect_text "calibrate fits the memory bandwidth from them" "$work/calibrated.json" "HBM bandwidth calibrated by topoep calibrate"
# The same loop on a preset reshaped to mpirun's ranks: the calibrated file keeps that shape.
"${mpi[@]}" "$harness" microbench --topology h800-4x8 --nodes 2 --gpus-per-node 2 \
  --out "$work/micro2" >"$work/out" 2>&1
expect "microbench on a reshaped preset" 0 $?
"$topoep" calibrate --measurements "$work/micro2" --topology h800-4x8 --nodes 2 --gpus-per-node 2 \
  --out "$work/calibrated2.json" >"$work/out" 2>&1
expect "calibrate reshapes the same way" 0 $?
"$topoep" topology validate "$work/calibrated2.json" >"$work/out" 2>&1
expect_text "and writes that shape" "$work/out" "valid topology 'h800-2x2' (2 nodes x 2 GPUs)"

echo "$failures failure(s)"
[[ $failures == 0 ]]
