#!/usr/bin/env bash
# bench/a2a_partner_check.py: re-pricing a simulation's all-to-all overlap with each record's
# true partner. Where a step's microbatches route alike, the true partner is the record's own
# transfers, so the step must not move; pairing mirrored layers that route apart must. Inputs
# it cannot price exit 2 naming the file and field.
set -uo pipefail
topoep=$(realpath "$1")
check=$(realpath "$2")
source "$(dirname "$0")/expect.sh"
export PATH=/usr/bin:$PATH  # Debian's python3 with pandas
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# 16 ranks on 2 nodes x 64 experts, 2 steps x 2 microbatches x 2 layers; a step's two
# microbatches route alike, its layers apart.
python3 - <<'PY'
import json
# Layer 0 sends most tokens to the other node's GPU of the same local index; layer 1 keeps
# most at home (4 experts a GPU) and sends a share to one hot expert. So layer 0's all-to-alls
# outlast its compute and layer 1's compute (the hot expert's GPU) outlasts its all-to-alls:
# pairing layer 0 with layer 1 changes what hides.
with open("alike.jsonl", "w") as f:
    for step in range(2):
        for microbatch in range(2):
            for layer in range(2):
                for rank in range(16):
                    target = (rank + 8) % 16 if layer == 0 else rank
                    weights = [1 + (e + step) % 3 + 60 * (e // 4 == target) + 20 * (layer == 1 and e == 5)
                               for e in range(64)]
                    counts = [w * 2048 // sum(weights) for w in weights]
                    counts[4 * target] += 2048 - sum(counts)
                    f.write(json.dumps({"step": step, "microbatch": microbatch, "layer": layer,
                                        "rank": rank, "counts": counts}) + "\n")
PY
cat >model16.json <<'JSON'
{"name": "small", "source": "test", "num_experts": 64, "top_k": 8, "hidden_size": 1024,
 "expert_ffn_size": 2048, "moe_layers": 2, "dispatch_bytes": 1, "dispatch_scale_block": 128,
 "combine_bytes": 2, "weight_bytes": 2, "dense_params_per_layer": 20000000, "tokens_per_rank": 256}
JSON
"$topoep" trace import --format jsonl --input alike.jsonl --out alike.trace --top-k 8 \
  --gpus-per-node 8 >out.txt 2>&1
expect "the trace imports" 0 $?
simulate() {  # simulate OUT_DIR FLAGS...
  local out=$1
  shift
  "$topoep" simulate --trace alike.trace --topology h800-4x8 --nodes 2 --model model16.json \
    --planners static,eplb-microbatch --out "$out" "$@" >out.txt 2>&1
}
simulate sim --a2a-overlap 1
expect "the simulation with the overlap runs" 0 $?

# Each planner's line: name, own partner ms, true partner ms (or a range), change.
changes() {  # changes OUTPUT: "planner change" per planner line
  awk '/^(static|eplb-microbatch) / { print $1, $NF }' "$1"
}
python3 "$check" sim >same.txt 2>&1
expect "the check runs" 0 $?
changes same.txt >same_changes.txt
expect "it prices both planners" 2 "$(wc -l <same_changes.txt)"
expect "microbatches that route alike leave every step where it was" 0 \
  "$(grep -vcE ' [+-]0\.000%$' same_changes.txt)"
python3 "$check" sim --mirrored >mirrored.txt 2>&1
expect "the mirrored check runs" 0 $?
expect_text "it says how it pairs" mirrored.txt "partners: layer L - 1 - l"
changes mirrored.txt >mirrored_changes.txt
expect "layers that route apart, paired mirrored, move every planner's step" 0 \
  "$(grep -cE ' [+-]0\.000%$' mirrored_changes.txt)"

simulate none
python3 "$check" none >out.txt 2>&1
expect "a run without the overlap exits 2" 2 $?
expect_text "naming the file and field" out.txt \
  "none/summary.json: run.sim_options.a2a_overlap_fraction is 0.0"
python3 - sim/per_layer.csv <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
with open(sys.argv[1], "w", newline="") as f:
    fields = [k for k in rows[0] if k != "outside_forward_us"]
    writer = csv.DictWriter(f, fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
PY
python3 "$check" sim >out.txt 2>&1
expect "a per_layer.csv from before outside_forward_us exits 2" 2 $?
expect_text "naming the file and column" out.txt \
  "sim/per_layer.csv: no column outside_forward_us"
python3 "$check" missing >out.txt 2>&1
expect "a folder without a simulation exits 2" 2 $?
expect_text "naming the file it wants" out.txt "missing/summary.json: not found"

echo "$failures failure(s)"
[[ $failures == 0 ]]
