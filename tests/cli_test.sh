#!/usr/bin/env bash
# End-to-end checks of the `topoep` command: exit codes, JSON output, and errors that name
# the file and field. Usage: cli_test.sh PATH_TO_TOPOEP
set -uo pipefail
topoep=$1
work=${TEST_TMPDIR:-$(mktemp -d)}
source "$(dirname "$0")/expect.sh"

"$topoep" --version >"$work/out" 2>&1
expect "--version exits 0" 0 $?
expect_text "--version prints the version" "$work/out" "topoep 0.1.0"

"$topoep" --help >"$work/out" 2>&1
expect "--help exits 0" 0 $?
expect_text "--help lists subcommands" "$work/out" "topology"

"$topoep" topology show --help >/dev/null 2>&1
expect "subcommand --help exits 0" 0 $?

"$topoep" --no-such-flag >/dev/null 2>&1
expect "unknown flag exits 2" 2 $?

"$topoep" >/dev/null 2>&1
expect "missing subcommand exits 2" 2 $?

"$topoep" demo --steps 2 --out "$work/demo" >"$work/out" 2>&1
expect "demo exits 0" 0 $?
expect_text "demo shows the paper's cluster" "$work/out" "h800-4x8"
expect_text "demo compares TopoEP with the baselines" "$work/out" "TopoEP step-time speedup over"
expect_text "and with itself blind to the link hierarchy" "$work/out" "topoep-flat is TopoEP's solver blind to the link hierarchy"
expect_text "demo says what its byte columns add up" "$work/out" "token dispatch plus replica weights"
expect_text "demo gives what each planner's busiest GPU holds" "$work/out" "Memory the busiest GPU holds at its peak, in GB"
tr '\n' ' ' <"$work/out" >"$work/out.flat"  # the note is wrapped to the terminal's width
expect_text "and says the whole model on 32 H800s does not fit under any planner" "$work/out.flat" \
  "Note: the busiest GPU holds more than its 80 GB of memory (H800 SXM5 80GB) under every planner, before what is not counted: this layout does not fit as run."
for file in summary.json per_layer.csv per_step.csv timeline.json; do
  [[ -s "$work/demo/$file" ]]
  expect "demo writes $file" 0 $?
done

"$topoep" topology list >"$work/out" 2>&1
expect "topology list exits 0" 0 $?
expect_text "topology list shows NVL72" "$work/out" "gb200-nvl72-2x72"
expect_text "and how to reshape a preset" "$work/out" "--nodes N, --gpus-per-node G"

"$topoep" model list >"$work/out" 2>&1
expect "model list exits 0" 0 $?
expect_text "model list shows each preset with its expert's weights" "$work/out" "deepseek-v3       256      8      7168    2048        58          3             129280      88.1 MB"
"$topoep" model show deepseek-v3 --topology h800-4x8 >"$work/out" 2>&1
expect "model show --topology exits 0" 0 $?
expect_text "model show gives dispatch bytes with the fp8 scales" "$work/out" "7392 bytes"
expect_text "model show gives the expert activations a token assignment keeps" "$work/out" "26624 bytes kept for the backward ((hidden + 3 x expert FFN) x combine bytes), 22528 bytes with the gated activation recomputed"
expect_text "model show gives a token assignment's token buffers" "$work/out" "28672 bytes for a moment as its layer's forward runs, 28672 bytes as its backward does"
expect_text "and the dense activations a token keeps, MLA's latents instead of its heads when recomputed" "$work/out" "243328 bytes a token and MoE layer kept for the backward (attention, norms, router, shared experts), 79488 bytes with the norms and MLA's up-projections recomputed; a dense-only layer 340608 bytes, 176768 bytes"
expect_text "and the memory-bound kernels' bytes at an expert" "$work/out" "133568 bytes read and written at its expert, forward and backward"
expect_text "and a token's of a layer, less with DeepEP's fused permutations" "$work/out" "943360 bytes a token with the alltoall dispatcher, 482816 bytes with DeepEP's"
expect_text "and what the output head and the loss keep, the softmax in fp32" "$work/out" "545792 bytes a token kept for the backward on the last stage (the final norm, the head's input, the loss's fp32 softmax over the vocabulary), 531456 bytes with the norms recomputed"
expect_text "and what exists only while the loss runs: the logits in bf16 and fp32 (6 x 129280)" "$work/out" "for the moment the loss runs, 775680 bytes more (the logits in bf16 and their fp32 copy)"
expect_text "model show says how MLA compresses" "$work/out" "(MLA: query latent 1536, key-value latent 512, RoPE 64)"
expect_text "model show gives the weights' time on the cluster's links" "$work/out" "553.9 us over NVLink"
expect_text "model show gives the dense-only layers' and the head's share" "$work/out" "101.0 MFLOP a token (3 / 58 of a 1334.7 MFLOP dense-only layer and 1 / 58 of a 1853.4 MFLOP output head)"
expect_text "model show gives the dense gradients' all-reduce and its overlap" "$work/out" "6463.0 us a layer and step, as NCCL's ring over the 32 GPUs, with the replica gradients' in the backward's link-idle compute (the attention backward after it: 9058.5 us)"
expect_text "model show gives the attention core's FlashAttention efficiencies" "$work/out" "0.585 of the bf16 peak forward, 0.548 backward (2.5 x the forward's FLOPs) at 4096 tokens a sequence, as FlashAttention runs it (the topology's curve)"
"$topoep" topology show h800-4x8 >"$work/topology-out" 2>&1
expect_text "topology show gives the attention core's curve" "$work/topology-out" "forward 512:0.295 1024:0.427 2048:0.527 4096:0.585 8192:0.608 16384:0.623"
"$topoep" topology show a100-8x8 >"$work/topology-out" 2>&1
expect_text "and says where a GPU has none" "$work/topology-out" "none given: the GEMM curve's best, forward and backward"
expect_text "and the distributed optimizer's halves" "$work/out" "3231.5 us reduce-scatter overlapped alike, 3231.5 us all-gather on the step's first microbatch, in the link-idle forward of the layer before"
expect_text "model show gives a GPU's model state with every layer on the cluster" "$work/out" "599.12 GB with every MoE layer on 32 GPUs"
expect_text "and a spare slot's, 58 layers of 2 x 88 MB" "$work/out" "10.22 GB a GPU over every MoE layer"
"$topoep" model show mixtral-8x7b --json >"$work/mixtral.json" 2>"$work/err"
expect "model show --json exits 0" 0 $?
"$topoep" model validate "$work/mixtral.json" >"$work/out" 2>&1
expect "model validate accepts show's output" 0 $?
expect_text "model validate names the model" "$work/out" "valid model 'mixtral-8x7b' (8 experts, top-2, 32 MoE layers)"
# model from-hf: a config.json's fields, named after its directory; the file it writes validates
# and is never overwritten.
mkdir -p "$work/Mixtral-8x7B-v0.1"
echo '{"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
  "num_local_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 32,
  "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000}' \
  >"$work/Mixtral-8x7B-v0.1/config.json"
rm -f "$work/from-hf.json"
"$topoep" model from-hf "$work/Mixtral-8x7B-v0.1/config.json" --out "$work/from-hf.json" >"$work/out" 2>&1
expect "model from-hf exits 0" 0 $?
"$topoep" model validate "$work/from-hf.json" >"$work/out" 2>&1
expect_text "its file validates, named after the directory" "$work/out" "valid model 'Mixtral-8x7B-v0.1' (8 experts, top-2, 32 MoE layers)"
"$topoep" model from-hf "$work/Mixtral-8x7B-v0.1/config.json" --out "$work/from-hf.json" >"$work/out" 2>&1
expect "model from-hf refuses to overwrite (exit 2)" 2 $?
"$topoep" model from-hf "$work/Mixtral-8x7B-v0.1/config.json" --fp8-gemms >"$work/from-hf-fp8.json" 2>&1
expect "model from-hf takes the run's fp8 GEMMs" 0 $?
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(d["gemm_precision"] != "fp8" or "fp8 GEMMs" not in d["source"])' \
  "$work/from-hf-fp8.json"
expect "and writes them into the model file and its source" 0 $?
echo '{"model_type": "llama"}' >"$work/llama.json"
"$topoep" model from-hf "$work/llama.json" >"$work/out" 2>&1
expect "model from-hf refuses a family it does not read (exit 2)" 2 $?
expect_text "the field is named" "$work/out" "llama.json: field 'model_type': 'llama' is not a family"
edit_json "$work/mixtral.json" "$work/bad-model.json" 'd["top_k"] = 9'
"$topoep" model validate "$work/bad-model.json" >"$work/out" 2>&1
expect "model validate rejects top-k beyond the experts with exit 2" 2 $?
expect_text "the model error names file and field" "$work/out" "$work/bad-model.json: field 'top_k'"
"$topoep" model validate deepseek-v3 >"$work/out" 2>&1
expect "model validate takes files, not presets (exit 2)" 2 $?

"$topoep" topology show h800-4x8 --json >"$work/h800.json" 2>"$work/err"
expect "show --json exits 0" 0 $?
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["nodes"]==4, d' "$work/h800.json"
expect "show --json prints valid JSON" 0 $?

"$topoep" topology validate "$work/h800.json" >"$work/out" 2>&1
expect "validate accepts show's output" 0 $?
expect_text "validate names the topology" "$work/out" "valid topology 'h800-4x8'"

edit_json "$work/h800.json" "$work/bad.json" 'd["scale_out"]["bandwidth_gb_per_s"] = 0'
"$topoep" topology validate "$work/bad.json" >"$work/out" 2>&1
expect "validate rejects zero bandwidth with exit 2" 2 $?
expect_text "error names file and field" "$work/out" "$work/bad.json: field 'scale_out.bandwidth_gb_per_s'"

"$topoep" topology validate "$work/does-not-exist.json" >"$work/out" 2>&1
expect "validate of a missing file exits 2" 2 $?
expect_text "missing file is named" "$work/out" "does-not-exist.json: cannot open"

"$topoep" topology show no-such-preset >"$work/out" 2>&1
expect "unknown preset exits 2" 2 $?
expect_text "unknown preset lists presets" "$work/out" "presets: a100-8x8, b200-8x8, gb200-nvl72-2x72"

python3 - "$work/counts.json" "$work/negative.json" <<'PY'
import json, sys
rows = [[(r * 7 + e * 13) % 50 + (400 if e == 3 else 0) for e in range(256)] for r in range(32)]
json.dump({"layers": [rows, rows]}, open(sys.argv[1], "w"))
rows[5][17] = -1
json.dump({"counts": rows}, open(sys.argv[2], "w"))
PY
"$topoep" solve --counts "$work/counts.json" --json >"$work/solve.json" 2>"$work/err"
expect "solve --json exits 0" 0 $?
python3 - "$work/solve.json" <<'PY'
import json, sys
layers = json.load(open(sys.argv[1]))["layers"]
assert len(layers) == 2, layers
for layer in layers:
    assert layer["plan_hash"].startswith("0x") and len(layer["plan_hash"]) == 18
    assert len(layer["replicas"]) == 32 and all(len(r) == 1 for r in layer["replicas"])
    assert sum(route[3] for route in layer["routes"]) == sum(layer["loads"])
    assert layer["max_mean_after"] <= layer["max_mean_before"]
    assert layer["ib_bytes_after"] <= layer["ib_bytes_before"]
    assert layer["predicted_us_after"] <= layer["predicted_us_before"]
assert layers[0]["plan_hash"] == layers[1]["plan_hash"]  # same counts, same plan
PY
expect "solve --json has the documented fields and properties" 0 $?
"$topoep" solve --counts "$work/counts.json" --fp8-gemms --json >"$work/solve-fp8.json" 2>"$work/err"
expect "solve --fp8-gemms exits 0" 0 $?
python3 - "$work/solve.json" "$work/solve-fp8.json" <<'PY'
import json, sys
bf16, fp8 = (json.load(open(path))["layers"][0] for path in sys.argv[1:])
# The same counts, at half the compute: the static plan's predicted time is shorter.
assert fp8["predicted_us_before"] < bf16["predicted_us_before"], (bf16, fp8)
PY
expect "and weighs the plans at the fp8 peak" 0 $?

for planner in topoep topoep-flat topoep-balance static eplb eplb-microbatch shadowing ideal; do
  "$topoep" solve --counts "$work/counts.json" --planner "$planner" --json >"$work/planner.json" 2>&1
  expect "solve --planner $planner exits 0" 0 $?
  python3 - "$work/planner.json" "$planner" <<'PY'
import json, sys
layers = json.load(open(sys.argv[1]))["layers"]
assert len(layers) == 2, layers
for layer in layers:
    assert layer["predicted_us_after"] > 0 and layer["overhead_us"] >= 0, layer
    if sys.argv[2] in ("topoep", "ideal", "static"):  # these never predict worse than static
        assert layer["predicted_us_after"] <= layer["predicted_us_before"] + 1e-6, layer
    if sys.argv[2] != "ideal":
        assert layer["plan_hash"].startswith("0x"), layer
PY
  expect "solve --planner $planner prints JSON layers" 0 $?
  "$topoep" solve --counts "$work/counts.json" --planner "$planner" --check >"$work/out" 2>&1
  expect "solve --planner $planner --check prints its table and exits 0" 0 $?
  expect_text "solve --planner $planner --check finds every plan valid" "$work/out" "--check: all 2 plans valid"
  if [[ $planner == eplb ]]; then  # no earlier steps to replan from: the table says so
    expect_text "solve --planner eplb says it kept the home layout" "$work/out" "kept the home layout"
  else
    expect_no_text "solve --planner $planner has no eplb note" "$work/out" "kept the home layout"
  fi
done

"$topoep" solve --counts "$work/counts.json" --planner magic >"$work/out" 2>&1
expect "unknown planner exits 2" 2 $?
expect_text "unknown planner lists the planners" "$work/out" "eplb-microbatch"
"$topoep" solve --counts "$work/counts.json" --planner eplb --ib-slack 0.05 >"$work/out" 2>&1
expect "--ib-slack with another planner than topoep exits 2" 2 $?
expect_text "--ib-slack says whose option it is" "$work/out" "--ib-slack: applies to the topoep planner only, not 'eplb'"
"$topoep" solve --counts "$work/counts.json" --planner eplb --ib-opened-run 0 >"$work/out" 2>&1
expect "--ib-opened-run with another planner than topoep exits 2" 2 $?
expect_text "--ib-opened-run says whose option it is" "$work/out" \
  "--ib-opened-run: applies to the topoep planner only, not 'eplb'"
"$topoep" solve --counts "$work/counts.json" --planner static --max-moves 8 >"$work/out" 2>&1
expect "--max-moves with another planner than topoep exits 2" 2 $?
expect_text "--max-moves says whose option it is" "$work/out" "--max-moves: applies to the topoep, topoep-flat and topoep-balance planners only, not 'static'"
"$topoep" solve --counts "$work/counts.json" --max-moves 2 --json >"$work/capped.json" 2>"$work/out"
expect "solve takes a move cap" 0 $?
"$topoep" solve --counts "$work/counts.json" --max-moves -1 >"$work/out" 2>&1
expect "solve rejects a negative move cap" 2 $?
expect_text "the bad cap is named" "$work/out" "--max-moves"

"$topoep" solve --counts "$work/counts.json" --threads 2 >"$work/out" 2>&1
expect "solve table exits 0" 0 $?
expect_text "solve table names the planner" "$work/out" "topoep on h800-4x8"

# --explain: the moves each plan keeps; in JSON they rebuild the plan's loads from the static
# plan's (every token at its expert's home), and the same plan hash as without --explain.
"$topoep" solve --counts "$work/counts.json" --explain >"$work/out" 2>&1
expect "solve --explain exits 0" 0 $?
expect_text "solve --explain lists layer 0's moves" "$work/out" "layer 0: "
expect_text "solve --explain has the moves' table" "$work/out" "est. gain us"
"$topoep" solve --counts "$work/counts.json" --explain --json >"$work/explained.json" 2>"$work/err"
expect "solve --explain --json exits 0" 0 $?
python3 - "$work/counts.json" "$work/explained.json" "$work/solve.json" <<'PY'
import json, sys
counts = json.load(open(sys.argv[1]))
layers = counts["layers"] if "layers" in counts else [counts["counts"]]
explained = json.load(open(sys.argv[2]))["layers"]
plain = json.load(open(sys.argv[3]))["layers"]
for matrix, layer, same in zip(layers, explained, plain):
    assert layer["plan_hash"] == same["plan_hash"], "--explain changed the plan"
    assert layer["run"] in ("first", "seeded", "opened", "ib-opened"), layer["run"]
    ranks, experts = len(matrix), len(matrix[0])
    per_rank = experts // ranks  # contiguous homes
    loads = [0] * ranks
    for e in range(experts):
        loads[e // per_rank] += sum(row[e] for row in matrix)
    for move in layer["moves"]:
        assert move["phase"] in ("greedy", "ib") and move["tokens"] > 0, move
        assert move["from"] in ("home", "replica") and move["to"] in ("home", "replica", "new replica"), move
        loads[move["from_rank"]] -= move["tokens"]
        loads[move["to_rank"]] += move["tokens"]
    assert loads == layer["loads"], (loads, layer["loads"])
PY
expect "solve --explain --json: the moves rebuild each plan's loads" 0 $?
"$topoep" solve --counts "$work/counts.json" --explain --planner static >"$work/out" 2>&1
expect "--explain with another planner exits 2" 2 $?
expect_text "--explain says what it reads" "$work/out" "--explain: reads the TopoEP host solver's moves"

"$topoep" solve --counts "$work/counts.json" --linear-compute --no-weight-cost >"$work/out" 2>&1
expect "solve --linear-compute exits 0" 0 $?
expect_text "solve table says compute is linear" "$work/out" "replica weights free, linear compute"

"$topoep" solve --counts "$work/negative.json" >"$work/out" 2>&1
expect "solve rejects negative counts with exit 2" 2 $?
expect_text "negative count is named" "$work/out" "negative.json: field 'counts[5][17]'"
# 10^15 assignments per count: more tokens per rank than an int holds, refused by the time they
# would take (not by a wrapped, negative token count).
python3 -c 'import json, sys; json.dump({"counts": [[10**15] * 64] * 32}, open(sys.argv[1], "w"))' \
  "$work/vast.json"
"$topoep" solve --counts "$work/vast.json" --model deepseek-v2-lite >"$work/out" 2>&1
expect "solve refuses counts beyond the picosecond range with exit 2" 2 $?
expect_text "the refusal gives the time they would take" "$work/out" "lead to a time of 1.42e+09 s"

# Counts with an expert count no preset has (32 experts on 16 GPUs): solve weighs them with the
# documented default, DeepSeek-V3's experts, and says so on stderr, leaving --json's output a plan.
python3 -c 'import json, sys; json.dump({"counts": [[(7 * r + 13 * e) % 900 for e in range(32)]
  for r in range(16)]}, open(sys.argv[1], "w"))' "$work/e32.json"
"$topoep" solve --counts "$work/e32.json" --topology h800-4x8 --nodes 2 --json \
  >"$work/e32.out" 2>"$work/err"
expect "solve without --model, when no preset has the experts, exits 0" 0 $?
expect_text "it names the default it weighs with" "$work/err" "no preset has 32 experts: weighing the plans with deepseek-v3 with 32 experts (top-8); pass --model to choose"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert len(d["layers"][0]["loads"]) == 16' \
  "$work/e32.out"
expect "and prints the plan as JSON" 0 $?

"$topoep" solve --counts "$work/counts.json" --model mixtral-8x7b >"$work/out" 2>&1
expect "solve rejects a model with another expert count" 2 $?
expect_text "the counts file and the model are named" "$work/out" "--model: $work/counts.json has 256 experts, model 'mixtral-8x7b' has 8"
expect_text "the presets that fit are named" "$work/out" "has 8; presets with 256 experts: deepseek-v3"

"$topoep" solve --counts "$work/counts.json" --topology h100-8x8 >"$work/out" 2>&1
expect "solve rejects a topology with another GPU count" 2 $?
expect_text "the counts file and the topology are named" "$work/out" "--topology: $work/counts.json has 32 source ranks (rows), topology 'h100-8x8' has 64 GPUs"
expect_text "the preset that fits is named" "$work/out" "has 64 GPUs; presets with 32 GPUs: h800-4x8"

"$topoep" solve --counts "$work/counts.json" --slots 300 >"$work/out" 2>&1
expect "solve rejects too many slots" 2 $?
expect_text "too many slots names the flag" "$work/out" "error: --slots: 300 spare slots per rank is too many"

echo '{"weight": [[90,132,40,61,104,165,39,4,73,56,183,86]]}' >"$work/weight.json"
"$topoep" eplb --weights "$work/weight.json" --replicas 16 --groups 4 --nodes 2 --gpus 8 --json >"$work/eplb.json" 2>&1
expect "eplb --json exits 0" 0 $?
python3 - "$work/eplb.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["phy2log"]) == 1 and len(d["phy2log"][0]) == 16, d
assert sorted(set(d["phy2log"][0])) == list(range(12)), d
assert [sum(1 for p in d["phy2log"][0] if p == e) for e in range(12)] == d["logcnt"][0], d
assert all(len(row) == max(d["logcnt"][0]) for row in d["log2phy"][0]), d
PY
expect "eplb --json prints consistent phy2log, logcnt and log2phy" 0 $?

"$topoep" eplb --weights "$work/weight.json" --replicas 18 --groups 4 --nodes 2 --gpus 8 >"$work/out" 2>&1
expect "eplb rejects replicas not divisible by GPUs" 2 $?
expect_text "eplb names the flag" "$work/out" "error: --replicas: "

echo '{"weight": [[1, 2], [3]]}' >"$work/ragged.json"
"$topoep" eplb --weights "$work/ragged.json" --replicas 4 --groups 1 --nodes 1 --gpus 2 >"$work/out" 2>&1
expect "eplb rejects ragged weights" 2 $?
expect_text "ragged weights named" "$work/out" "ragged.json: field 'weight[1]'"

echo '{"weight": [[1, 1e39]]}' >"$work/huge.json"
"$topoep" eplb --weights "$work/huge.json" --replicas 2 --groups 1 --nodes 1 --gpus 1 >"$work/out" 2>&1
expect "eplb rejects a load float32 cannot hold" 2 $?
expect_text "the load beyond float32 is named with its file" "$work/out" "huge.json: field 'weight[0][1]'"

rm -rf "$work/t.trace"
"$topoep" trace synth --out "$work/t.trace" --ranks 16 --experts 4 >"$work/out" 2>&1
expect "trace synth rejects a top-k above the experts" 2 $?
expect_text "the flag and both values are named" "$work/out" "error: --top-k: must be 1 to the 4 experts (got 8)"
[[ ! -e "$work/t.trace" ]]
expect "a refused synth writes nothing" 0 $?
"$topoep" trace synth --out "$work/t.trace" --ranks 16 --experts 32 --top-k 4 >"$work/out" 2>&1
expect "trace synth exits 0" 0 $?
"$topoep" trace info "$work/t.trace" >"$work/out" 2>&1
expect "trace info exits 0" 0 $?
expect_text "trace info shows the shape" "$work/out" "16 ranks (8 per node) x 32 experts"
expect_text "and the simulate command that runs it, reshaped, with a model to write" "$work/out" "simulate it with: topoep simulate --trace $work/t.trace --topology h800-4x8 --nodes 2 --model FILE"
expect_text "naming from-hf for the model" "$work/out" "(no model preset has 32 experts and top-4: topoep model from-hf CONFIG.json writes one"
expect_no_text "no data-parallel hint where no preset has a share of its ranks" "$work/out" "data-parallel copies"
"$topoep" trace validate "$work/t.trace" >"$work/out" 2>&1
expect "trace validate accepts a good trace" 0 $?
"$topoep" trace synth --out "$work/t64.trace" --ranks 64 --experts 64 --top-k 6 --layers 1 \
  --steps 1 >/dev/null 2>&1
"$topoep" trace info "$work/t64.trace" >"$work/out" 2>&1
expect_text "trace info names the data-parallel reading of 64 ranks" "$work/out" \
  "(recorded on 2 data-parallel copies of a 32-GPU group, each routing its own ranks: --topology h800-4x8 --data-parallel 2)"
# Experts the GPUs do not divide: refused, naming --uneven-homes, which runs them.
"$topoep" trace synth --out "$work/u.trace" --ranks 16 --experts 40 --top-k 4 --layers 1 \
  --steps 1 >/dev/null 2>&1
"$topoep" model show deepseek-v3 --json >"$work/m40.json"
edit_json "$work/m40.json" "$work/m40.json" 'd["num_experts"], d["top_k"] = 40, 4'
"$topoep" topology show h800-4x8 --json >"$work/t16.json"
edit_json "$work/t16.json" "$work/t16.json" 'd["nodes"] = 2'
"$topoep" simulate --trace "$work/u.trace" --topology "$work/t16.json" --model "$work/m40.json" \
  >"$work/out" 2>&1
expect "simulate refuses 40 experts on 16 GPUs" 2 $?
expect_text "the refusal names the layout that would take them" "$work/out" "--uneven-homes; in a sweep, \"uneven_homes\": [true]) would home 3 experts on the first 8 GPUs and 2 on the others"
"$topoep" simulate --trace "$work/u.trace" --topology "$work/t16.json" --model "$work/m40.json" \
  --uneven-homes --check >"$work/out" 2>&1
expect "simulate --uneven-homes runs them, every plan valid" 0 $?
expect_text "every plan checked" "$work/out" "--check: all"
"$topoep" trace info "$work/u.trace" >"$work/out" 2>&1
expect_text "trace info measures static loads on the uneven homes" "$work/out" "static GPU loads are on the uneven homes"
expect_text "and its simulate command homes them unevenly" "$work/out" "--nodes 2 --model FILE --uneven-homes"
"$topoep" trace synth --out "$work/t.trace" >"$work/out" 2>&1
expect "trace synth refuses to overwrite (exit 2)" 2 $?
expect_text "the existing trace is named" "$work/out" "t.trace: already exists: not overwriting it"
rm -rf "$work/s.trace"
"$topoep" trace slice "$work/t.trace" --out "$work/s.trace" --steps 1:2 --layers 0,2 >"$work/out" 2>&1
expect "trace slice exits 0" 0 $?
"$topoep" trace info "$work/s.trace" >"$work/out" 2>&1
expect_text "the slice has one step and two layers" "$work/out" "1 steps x 2 microbatches x 2 layers = 4 records"
"$topoep" trace slice "$work/t.trace" --out "$work/s2.trace" --steps 5:9 >"$work/out" 2>"$work/err"
expect "trace slice rejects steps outside the trace" 2 $?
[[ ! -s "$work/out" ]]
expect "a failed slice prints nothing on stdout (no half line before the error)" 0 $?
cat "$work/err" >>"$work/out"
expect_text "the bad range is named" "$work/out" "steps"
edit_json "$work/t.trace/index.json" "$work/t.trace/index.json" 'd["metadata"]["num_experts"] = 31'
"$topoep" trace validate "$work/t.trace" >"$work/out" 2>&1
expect "trace validate rejects a shape mismatch with exit 2" 2 $?
expect_text "the chunk and tensor are named" "$work/out" "chunk-000000.safetensors: field 'counts'"

# trace import: per-rank counts as JSON lines; the shape written is printed, top-k included.
python3 - "$work/rec.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for step in range(2):
        for rank in range(8):
            f.write(json.dumps({"step": step, "microbatch": 0, "layer": 0, "rank": rank,
                                "counts": [(rank + e) % 5 * 8 for e in range(16)]}) + "\n")
PY
"$topoep" trace import --format jsonl --input "$work/rec.jsonl" --out "$work/rec.trace" \
  --top-k 8 --gpus-per-node 4 >"$work/out" 2>&1
expect "trace import jsonl exits 0" 0 $?
# trace info: each layer's static max/mean GPU load, the median over its records, as the
# simulator measures it (every token at its expert's home, homes contiguous: 2 experts a rank).
"$topoep" trace info "$work/rec.trace" --json >"$work/info.json" 2>&1
python3 - "$work/info.json" <<'PY'
import json, statistics, sys
info = json.load(open(sys.argv[1]))
ratios = []
for step in range(2):  # the counts above: the same each step
    totals = [sum((rank + e) % 5 * 8 for rank in range(8)) for e in range(16)]
    loads = [totals[2 * r] + totals[2 * r + 1] for r in range(8)]
    ratios.append(max(loads) * 8 / sum(loads))
got = info["layers"][0]["static_max_mean_gpu_load_median"]
sys.exit(0 if abs(got - statistics.median(ratios)) < 1e-9 else 1)
PY
expect "trace info's static max/mean GPU load is the median of the records' own" 0 $?
expect_text "trace import prints the shape it wrote" "$work/out" "2 records imported from $work/rec.jsonl: 8 ranks (4 per node) x 16 experts, top-8; 2 steps x 1 microbatches x 1 layers"
"$topoep" trace import --format jsonl --input "$work/rec.jsonl" --out "$work/rec-k.trace" \
  --gpus-per-node 4 >"$work/out" 2>&1
expect "trace import without --top-k, of counts no preset's shape fits, exits 2" 2 $?
expect_text "it asks for --top-k" "$work/out" "error: --top-k: not given, and the input's counts cannot say how many experts a token picks; no model preset has 16 experts"
[[ ! -e "$work/rec-k.trace" ]]
expect "nothing is written without a top-k" 0 $?
python3 -c 'import json; print(json.dumps({"logical_count": [[0] * 64, list(range(1, 65))]}))' \
  >"$work/stats64.json"
"$topoep" trace import --format sglang-stats --input "$work/stats64.json" --out "$work/stats64.trace" \
  --steps 1 --ranks 8 >"$work/out" 2>&1
expect "trace import sglang-stats without --top-k exits 0" 0 $?
expect_text "top-k is the preset's with as many experts, and said so" "$work/out" "top-6: the deepseek-v2-lite preset's, the model preset with 64 experts (the counts cannot say it; --top-k sets it)"
"$topoep" trace info "$work/stats64.trace" --json >"$work/out" 2>&1
expect_text "statistics are sampled at 4096 tokens a rank unless told" "$work/out" '"tokens_per_rank":4096'
"$topoep" trace import --format jsonl --input "$work/rec.jsonl" --out "$work/rec0.trace" \
  --top-k 0 >"$work/out" 2>&1
expect "trace import refuses top-k 0 (exit 2)" 2 $?
expect_text "the option is named" "$work/out" "--top-k"
"$topoep" trace import --format jsonl --input "$work/rec.jsonl" --out "$work/rec64.trace" \
  --ranks 64 >"$work/out" 2>&1
expect "trace import refuses an option its format does not use (exit 2)" 2 $?
expect_text "the option and the formats it applies to are named" "$work/out" "--ranks: does not apply to --format jsonl (only to esft, flame-csv, topk-csv, topk-npy, sglang-stats)"
[[ ! -e "$work/rec64.trace" ]]
expect "nothing is written" 0 $?
mkdir -p "$work/topk"
printf '0,1\n2,3\n' >"$work/topk/layer0.csv"
"$topoep" trace import --format topk-csv --input "$work/topk" --out "$work/mb0.trace" --top-k 2 \
  --experts 4 --ranks 2 --gpus-per-node 2 --tokens-per-rank 1 --microbatches-per-step 0 \
  >"$work/out" 2>&1
expect "trace import refuses zero microbatches per step (exit 2; it divided by zero)" 2 $?
expect_text "the flag and its value are named" "$work/out" "error: --microbatches-per-step: must be at least 1 (got 0)"
[[ ! -e "$work/mb0.trace" ]]
expect "nothing is written for zero microbatches" 0 $?
head -c 40 "$work/rec.jsonl" >"$work/torn.jsonl"
"$topoep" trace import --format jsonl --input "$work/torn.jsonl" --out "$work/torn.trace" >"$work/out" 2>&1
expect "trace import refuses a torn line (exit 2)" 2 $?
expect_text "the torn line is named" "$work/out" "torn.jsonl: field 'line 1"
[[ ! -e "$work/torn.trace" ]]
expect "a refused import leaves no trace directory" 0 $?

# simulate: outputs, and errors that name what does not fit.
"$topoep" trace synth --out "$work/sim.trace" --ranks 16 --experts 64 --layers 2 --steps 3 >/dev/null 2>&1
expect "trace synth for simulate exits 0" 0 $?
"$topoep" simulate --trace "$work/sim.trace" --topology h800-4x8 --model deepseek-v3 >"$work/out" 2>&1
expect "simulate rejects a topology with another GPU count" 2 $?
expect_text "the topology mismatch is named, with the reshape that fits" "$work/out" "topology: 'h800-4x8' has 32 GPUs but the trace has 16 ranks; on 2 of its nodes it fits (--nodes 2; in a sweep, \"nodes\": [2])"
"$topoep" simulate --trace "$work/sim.trace" --topology gb200-nvl72-2x72 --model deepseek-v3 >"$work/out" 2>&1
expect "simulate rejects a topology whose nodes do not divide the ranks" 2 $?
expect_text "and asks for a file" "$work/out" "topology: 'gb200-nvl72-2x72' has 144 GPUs but the trace has 16 ranks; no preset has 16 GPUs: pass a file (topoep topology show gb200-nvl72-2x72 --json gives one to edit)"
cat >"$work/model16.json" <<'JSON'
{"name": "small", "source": "test", "num_experts": 64, "top_k": 8, "hidden_size": 1024,
 "expert_ffn_size": 512, "moe_layers": 2, "dispatch_bytes": 1, "dispatch_scale_block": 128,
 "combine_bytes": 2, "weight_bytes": 2, "dense_params_per_layer": 1000000, "tokens_per_rank": 256}
JSON
"$topoep" topology show h800-4x8 --json >"$work/topo.json" 2>/dev/null
edit_json "$work/topo.json" "$work/topo.json" 'd["name"], d["nodes"] = "h800-2x8", 2'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model mixtral-8x7b >"$work/out" 2>&1
expect "simulate rejects a model with another expert count" 2 $?
expect_text "a preset model is named" "$work/out" "model.num_experts: 'mixtral-8x7b' has 8 experts but the trace has 64; no preset has 64 experts and top-8: pass a file (topoep model show mixtral-8x7b --json gives one to edit)"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" >"$work/out" 2>&1
expect "simulate without --model, when no preset fits, exits 2" 2 $?
expect_text "it asks for --model" "$work/out" "error: --model: not given, and no preset has 64 experts and top-8: pass a file (topoep model show deepseek-v3 --json gives one to edit)"
"$topoep" trace synth --out "$work/lite.trace" --ranks 16 --experts 64 --top-k 6 --layers 1 --steps 1 \
  >/dev/null 2>&1
"$topoep" simulate --trace "$work/lite.trace" --topology "$work/topo.json" --planners topoep,static \
  >"$work/out" 2>&1
expect "simulate without --model takes the one preset that fits" 0 $?
expect_text "and says which" "$work/out" "with deepseek-v2-lite, S = 1"
"$topoep" simulate --trace "$work/lite.trace" >"$work/out" 2>&1
expect "simulate without --topology, when no preset has the trace's ranks, exits 2" 2 $?
expect_text "it asks for --topology, with a reshape that fits" "$work/out" "error: --topology: not given, and no preset has 16 GPUs: reshape one (--topology h800-4x8 --nodes 2) or pass a file (topoep topology show h800-4x8 --nodes 2 --json gives one to edit)"
"$topoep" trace synth --out "$work/lite4.trace" --ranks 16 --gpus-per-node 4 --experts 64 --top-k 6 \
  --layers 1 --steps 1 >/dev/null 2>&1
"$topoep" simulate --trace "$work/lite4.trace" >"$work/out" 2>&1
expect_text "the reshape it suggests keeps the trace's GPUs per node" "$work/out" "reshape one (--topology h800-4x8 --nodes 4 --gpus-per-node 4)"
"$topoep" trace info "$work/lite4.trace" >"$work/out" 2>&1
expect_text "as trace info's simulate command does, with the one model that fits" "$work/out" "--topology h800-4x8 --nodes 4 --gpus-per-node 4 --model deepseek-v2-lite"
"$topoep" simulate --trace "$work/lite.trace" --topology h800-4x8 --nodes 2 --planners topoep,static \
  --out "$work/reshaped" >"$work/out" 2>&1
expect "simulate --topology h800-4x8 --nodes 2 runs a 16-rank trace" 0 $?
expect_text "on the preset renamed for its shape" "$work/out" "on h800-2x8 (2 x 8 GPUs) with deepseek-v2-lite"
"$topoep" simulate --trace "$work/lite.trace" --topology "$work/topo.json" --planners topoep,static \
  --out "$work/edited" >/dev/null 2>&1
cmp -s "$work/reshaped/per_layer.csv" "$work/edited/per_layer.csv"
expect "a reshaped preset prices like the same preset edited by hand" 0 $?
"$topoep" simulate --trace "$work/lite.trace" --nodes 2 >"$work/out" 2>&1
expect "--nodes without --topology is bad usage (exit 2)" 2 $?
expect_text "it names --topology" "$work/out" "--nodes requires --topology"
"$topoep" simulate --trace "$work/lite.trace" --topology h800-4x8 --nodes 0 >"$work/out" 2>&1
expect "--nodes 0 is bad usage (exit 2)" 2 $?
"$topoep" topology show h800-4x8 --nodes 1048576 --gpus-per-node 2 >"$work/out" 2>&1
expect "a reshape past the GPU limit exits 2" 2 $?
expect_text "it names --nodes and the limit" "$work/out" "error: --nodes: 1048576 nodes x 2 GPUs exceeds 1048576 GPUs"
"$topoep" topology show gb200-nvl72-2x72 --nodes 1 --gpus-per-node 36 --json >"$work/nvl36.json" 2>"$work/err"
expect "topology show --nodes --gpus-per-node --json exits 0" 0 $?
"$topoep" topology validate "$work/nvl36.json" >"$work/out" 2>&1
expect "the reshaped file is a valid topology" 0 $?
expect_text "named for its shape" "$work/out" "valid topology 'gb200-nvl72-1x36' (1 nodes x 36 GPUs)"
python3 -c 'import json; print(json.dumps({"counts": [[(r + e) % 5 for e in range(64)] for r in range(32)]}))' \
  >"$work/counts64.json"
"$topoep" solve --counts "$work/counts64.json" >"$work/out" 2>&1
expect "solve without --model takes the preset with the counts' experts" 0 $?
expect_text "and says which" "$work/out" "topoep on h800-4x8 (4 x 8), deepseek-v2-lite, S = 1"
expect_text "with the solver's IB slack, not simulate's" "$work/out" "IB slack 1.0% (--ib-slack)"
sed 's/"top_k": 8/"top_k": 6/' "$work/model16.json" >"$work/model16-top6.json"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16-top6.json" >"$work/out" 2>&1
expect "simulate rejects a model with another top-k" 2 $?
expect_text "a model file is named with its path" "$work/out" "model.top_k: 'small' ($work/model16-top6.json) routes each token to 6 experts but the trace to 8"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --threads 2 --out "$work/sim" --timeline "$work/sim/timeline.json" >"$work/out" 2>&1
expect "simulate exits 0" 0 $?
expect_text "simulate prints the ideal row" "$work/out" "ideal"
expect_text "a 3-step trace says that eplb never replanned" "$work/out" "this trace's 3 steps end before it, so eplb ran the home layout throughout"
expect_text "the table says that TopoEP's solve time is a parameter" "$work/out" "Note: topoep's GPU solve is charged 20 us per layer and microbatch"
expect_text "and how far its IB levelling may unbalance compute" "$work/out" "Note: topoep may raise a GPU's compute up to 5% above the mean"
cp "$work/out" "$work/sim.out"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners static --timeline-step 1 >"$work/out" 2>&1
expect "--timeline-step without --timeline is refused" 2 $?
expect_text "what it needs is named" "$work/out" "--timeline-step requires --timeline"
mkdir -p "$work/both"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners static --out "$work/both" --timeline "$work/both" >"$work/out" 2>&1
expect "a timeline path that is a directory is refused" 2 $?
expect_text "before the run, naming it" "$work/out" "error: $work/both: is a directory, not a file to write"
[[ -z "$(ls -A "$work/both")" ]]
expect "none of the run's outputs is written" 0 $?
# A results directory holds one run: no earlier run's rank_loads.csv beside this run's tables.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners static --out "$work/rerun" --rank-loads >"$work/out" 2>&1
expect "simulate --rank-loads exits 0" 0 $?
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners static --out "$work/rerun" >"$work/out" 2>&1
expect "simulate into the same directory without --rank-loads exits 0" 0 $?
expect_text "the earlier run's rank_loads.csv is removed, and said so" "$work/out" "Removed $work/rerun/rank_loads.csv"
[[ ! -e "$work/rerun/rank_loads.csv" ]]
expect "no rank_loads.csv is left from the earlier run" 0 $?
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --slots 2 --check >"$work/out" 2>&1
expect "simulate --check exits 0" 0 $?
expect_text "simulate --check finds every plan of the five planners valid" "$work/out" "--check: all 60 plans valid"
# solve --counts TRACE: its first records, each as its own layer.
"$topoep" solve --counts "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  >"$work/out" 2>&1
expect "solve --counts on a trace exits 0" 0 $?
expect_text "solve --counts on a trace says what it solved" "$work/out" "Solved all 12 records of $work/sim.trace, each as its own layer"
"$topoep" solve --counts "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --json >"$work/trace-solve.json" 2>&1
python3 -c 'import json, sys; assert len(json.load(open(sys.argv[1]))["layers"]) == 12' "$work/trace-solve.json"
expect "solve --counts on a trace --json has a layer per record" 0 $?

# --explain: TopoEP's moves on one record of the replay, the same for any thread count.
for threads in 1 2; do
  "$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
    --planners topoep,static --threads $threads --explain 2:1:1 >"$work/explain$threads" 2>&1
  expect "simulate --explain on $threads threads exits 0" 0 $?
done
expect_text "simulate --explain names the record" "$work/explain1" "TopoEP on step 2, microbatch 1, layer 1: "
expect_text "simulate --explain lists its moves" "$work/explain1" "est. gain us"
cmp -s "$work/explain1" "$work/explain2"
expect "simulate --explain: the same moves on 1 and 2 threads" 0 $?
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --explain 3:0:0 >"$work/out" 2>&1
expect "simulate --explain past the trace's steps exits 2" 2 $?
expect_text "the missing record is named" "$work/out" "--explain: step 3, microbatch 0, layer 0: the trace has 3 steps (0 to 2)"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners static --explain 0:0:0 >"$work/out" 2>&1
expect "simulate --explain without topoep exits 2" 2 $?
expect_text "it says whose moves it shows" "$work/out" "--explain: shows the topoep planner's moves"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --explain 0-0-0 >"$work/out" 2>&1
expect "simulate --explain in another form exits 2" 2 $?
expect_text "the form is said" "$work/out" "--explain: expects STEP:MICROBATCH:LAYER"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners eplb,static --eplb-period 1 >"$work/out" 2>&1
expect "simulate with a one-step EPLB period exits 0" 0 $?
expect_no_text "no note when eplb replans within the trace" "$work/out" "Note: eplb"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --slots 0 >"$work/out" 2>&1
expect "simulate without spare slots exits 0" 0 $?
expect_no_text "no solve-time note without spare slots (no solve runs)" "$work/out" "Note: topoep"
python3 - "$work/sim" <<'PY'
import csv, json, sys
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
names = [p["planner"] for p in s["planners"]]
assert names == ["topoep", "eplb", "eplb-microbatch", "shadowing", "static", "ideal"], names
for p in s["planners"]:
    assert 0 < p["percent_of_ideal"] <= 100.0 + 1e-9, p
rows = list(csv.DictReader(open(d + "/per_layer.csv")))
assert len(rows) == 3 * 2 * 2 * 6, len(rows)
steps = list(csv.DictReader(open(d + "/per_step.csv")))
assert len(steps) == 3 * 6, len(steps)
t = json.load(open(d + "/timeline.json"))
assert any(e.get("name") == "expert compute" for e in t["traceEvents"])
PY
expect "simulate writes summary, per-layer and per-step tables and a timeline" 0 $?
python3 - "$work/sim" "$work/sim.out" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
table = open(sys.argv[2]).read()
noted = []
for p in s["planners"]:
    name, moved = p["planner"], p["per_step_bytes"]["nvlink_weights"] + p["per_step_bytes"]["ib_weights"]
    note = f"Note: {name} made no replica on any record" in table
    # eplb never replanned on this 3-step trace: its own note says so.
    expected = moved == 0 and name not in ("static", "ideal", "eplb")
    assert note == expected, (name, moved, note)
    noted += [name] * note
# At 256 tokens per GPU no shadow pays for its broadcast here; TopoEP's replicas do.
assert noted == ["shadowing"], noted
PY
expect "a planner that moved no replica weights is said to have run the static plan" 0 $?
# One GPU a node: EPLB's hierarchical layout (a group a node) keeps every copy at home, and
# the note says so and how to run its global policy, which does replicate.
"$topoep" trace synth --out "$work/g1.trace" --ranks 4 --gpus-per-node 1 --experts 64 --layers 2 \
  --steps 2 >/dev/null 2>&1
"$topoep" simulate --trace "$work/g1.trace" --topology h800-4x8 --nodes 4 --gpus-per-node 1 \
  --model "$work/model16.json" --planners eplb-microbatch,static >"$work/out" 2>&1
expect "simulate runs EPLB on one GPU a node" 0 $?
expect_text "the note names EPLB's hierarchical policy on one GPU a node" "$work/out" \
  "eplb-microbatch made no replica on any record: with one GPU a node, EPLB's hierarchical"
expect_text "and the flag for its global policy" "$work/out" "--eplb-groups 1 runs its global policy."
"$topoep" simulate --trace "$work/g1.trace" --topology h800-4x8 --nodes 4 --gpus-per-node 1 \
  --model "$work/model16.json" --planners eplb-microbatch,static --eplb-groups 1 >"$work/out" 2>&1
expect "simulate runs EPLB's global policy on one GPU a node" 0 $?
expect_no_text "whose layouts then replicate" "$work/out" "eplb-microbatch made no replica"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners ideal >"$work/out" 2>&1
expect "simulate rejects the ideal alone" 2 $?
expect_text "the ideal alone is named" "$work/out" "planners: 'ideal' is a bound on other planners"
# Each overlap fraction: above 1 refused, naming the flag typed; taken, and recorded.
for overlap in weight:weight_overlap_fraction:0 gradient:gradient_overlap_fraction:0 \
  a2a:a2a_overlap_fraction:1; do
  IFS=: read -r flag field value <<<"$overlap"
  "$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
    --model "$work/model16.json" "--$flag-overlap" 2 >"$work/out" 2>&1
  expect "simulate rejects --$flag-overlap above 1" 2 $?
  expect_text "the $flag overlap's error names the flag typed" "$work/out" \
    "error: --$flag-overlap: must be in [0, 1]"
  "$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
    --model "$work/model16.json" --planners topoep,static "--$flag-overlap" "$value" \
    --out "$work/$flag" >"$work/out" 2>&1
  expect "simulate takes --$flag-overlap" 0 $?
  expect_text "summary.json records the $flag overlap" "$work/$flag/summary.json" \
    "\"$field\": $value.0"
done
python3 - "$work/a2a/per_layer.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
phases = ["dispatch_us", "compute_us", "combine_us", "weight_exposed_us", "combine_grad_us",
          "compute_grad_us", "dispatch_grad_us"]
for row in rows:
    whole = sum(float(row[p]) for p in phases)
    assert abs(float(row["moe_us"]) + float(row["a2a_hidden_us"]) - whole) < 0.01, row
assert any(float(row["a2a_hidden_us"]) > 0 for row in rows), rows
PY
expect "per_layer.csv's MoE time leaves out what ran behind compute, and says how much" 0 $?
python3 - "$work/a2a/summary.json" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["planners"]:
    t = p["per_step_us"]
    phases = sum(t[k] for k in ["dispatch", "compute", "combine", "weight_exposed",
                                "combine_grad", "compute_grad", "dispatch_grad"])
    assert t["a2a_hidden"] > 0, p
    assert abs(t["moe"] + t["a2a_hidden"] - phases) < 0.01, p
PY
expect "summary.json's MoE time per step is its phases less what ran behind compute" 0 $?
expect_text "the table notes how the overlap pairs microbatches" "$work/out" \
  "pairs each microbatch's forward with the backward of the one"
"$topoep" trace synth --out "$work/one_mb.trace" --ranks 16 --experts 64 --layers 2 --steps 2 \
  --microbatches 1 >/dev/null 2>&1
"$topoep" simulate --trace "$work/one_mb.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --a2a-overlap 1 >"$work/out" 2>&1
expect "simulate takes an overlap on one microbatch a step" 0 $?
expect_text "and says nothing could pair" "$work/out" "this trace has one microbatch a step"
# With the all-to-alls behind compute the stages run combined 1F1B, and say so.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-stages 2 \
  --a2a-overlap 1 >"$work/out" 2>&1
expect "simulate runs pipeline stages with the all-to-alls behind compute" 0 $?
expect_text "by combined 1F1B" "$work/out" "each on its own 16 GPUs, run by combined 1F1B"
expect_text "whose warm-up and drain have no partner" "$work/out" \
  "warm-up forwards and drain backwards"
expect_text "and that Megatron-LM needs virtual stages for it" "$work/out" \
  "Megatron-LM runs combined 1F1B across pipeline stages only with virtual stages"
# Pipeline stages: at most one a layer; a timeline of the stages; recorded, and
# what of the step the stages wait in summary.json and per_step.csv.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --pipeline-stages 3 >"$work/out" 2>&1
expect "simulate rejects more pipeline stages than layers" 2 $?
expect_text "the stages' error names the flag and the layers" "$work/out" \
  "error: --pipeline-stages: is 3, more than the 2 MoE layers of the trace"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-stages 2 \
  --timeline "$work/pp.json" >"$work/out" 2>&1
expect "simulate draws a timeline of pipeline stages" 0 $?
python3 - "$work/pp.json" <<'PY'
import json, sys
events = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
tracks = {(e["pid"], e["tid"]) for e in events}
assert tracks == {(0, 0), (0, 1), (1, 0), (1, 1)}, tracks
assert any(e["name"].startswith("backward ") for e in events), events
PY
expect "a track per planner and stage, with the microbatches' passes" 0 $?
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-stages 2 \
  --out "$work/pp" >"$work/out" 2>&1
expect "simulate runs pipeline stages" 0 $?
expect_text "and says how the layers split" "$work/out" \
  "2 pipeline stages of 1, 1 MoE layers, each on its own 16 GPUs, run by 1F1B"
python3 - "$work/pp" <<'PY'
import csv, json, sys
summary = json.load(open(sys.argv[1] + "/summary.json"))
assert summary["run"]["sim_options"]["pipeline_stages"] == 2, summary["run"]["sim_options"]
for p in summary["planners"]:
    assert 0 < p["per_step_us"]["pipeline_idle"] < p["step_time_us"], p
rows = list(csv.DictReader(open(sys.argv[1] + "/per_step.csv")))
assert rows and all(0 < float(r["pipeline_idle_us"]) < float(r["step_time_us"]) for r in rows), rows
PY
expect "summary.json and per_step.csv record the stages and what they wait" 0 $?
expect_text "it advises each planner's stage layout" "$work/out" \
  "Stage layouts these records predict the shortest step for"
python3 - "$work/pp" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1] + "/summary.json"))
for p in summary["planners"]:
    if p["planner"] == "ideal":
        assert "advised_pipeline_layers" not in p, p
        continue
    assert p["advised_pipeline_layers"] == [1, 1], p  # two layers, two stages: the only layout
    assert p["predicted_step_us"]["advised"] <= p["predicted_step_us"]["now"], p
# 1F1B: stage 0 holds two microbatches of its layer, stage 1 one.
assert summary["run"]["pipeline_peak_activations"] == [2, 1], summary["run"]
PY
expect "summary.json records the advised layout, the steps it predicts and the activations" 0 $?
expect_text "the activations each stage holds are printed" "$work/out" \
  "Activations each stage holds at its peak, in layer-microbatches: 2, 1"
# The advice keeps within what the run's layout holds, or a cap given; below what any layout
# needs it finds none. Without stages there is no advice to cap.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-stages 2 \
  --advice-max-activations 1 >"$work/out" 2>&1
expect "simulate takes a cap on the advice's activations" 0 $?
expect_text "and says no layout fits it" "$work/out" \
  "topoep: none found whose busiest stage holds at most 1 layer-microbatches of activations (this run's: 2)"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --advice-max-activations 4 \
  >"$work/out" 2>&1
expect "simulate refuses an activations cap without pipeline stages" 2 $?
expect_text "naming the flag" "$work/out" \
  "error: --advice-max-activations: caps the layout advice of pipeline stages"
# A cap on what the advised layout's busiest GPU would hold, in GB: too small for any layout.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-stages 2 \
  --advice-max-gb 0.05 --out "$work/pp-gb" >"$work/out" 2>&1
expect "simulate takes a cap on the advised layout's memory" 0 $?
tr '\n' ' ' <"$work/out" >"$work/out.flat"
expect_text "and says no layout fits it, against what this run's layout would hold" \
  "$work/out.flat" "and whose busiest GPU would hold at most 0.05 GB (this run's layout: "
python3 - "$work/pp-gb/summary.json" <<'PY'
import json, sys
for planner in json.load(open(sys.argv[1]))["planners"]:
    memory = planner["pipeline_gpu_memory"]
    assert memory["cap_gb"] == 0.05 and memory["advised"] is None, memory
    # The run's own layout, its activations at the rate it held them: at least what it held.
    assert memory["now"] >= planner["gpu_memory"]["bytes"] > 0.05e9, (memory, planner["gpu_memory"])
PY
expect "summary.json records the cap and what the run's layout would hold" 0 $?
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --advice-max-gb 80 >"$work/out" 2>&1
expect "simulate refuses a memory cap without pipeline stages" 2 $?
expect_text "naming the flag" "$work/out" \
  "error: --advice-max-gb: caps the layout advice of pipeline stages"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --pipeline-stages 2 --advice-max-activations -1 >"$work/out" 2>&1
expect "simulate refuses a negative activations cap" 2 $?
expect_text "naming the flag and the range" "$work/out" \
  "--advice-max-activations: Value -1 not in range 0 to 1073741824"
# The expert activations the busiest GPU holds: printed, in summary.json and per_step.csv;
# with the gated activation recomputed, (h + 2f) x 2 bytes a token assignment for (h + 3f) x 2.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-stages 2 \
  --recompute-moe-act --out "$work/pp-recompute" >"$work/out" 2>&1
expect "simulate counts the expert activations with the gated activation recomputed" 0 $?
expect_text "what each planner's busiest GPU holds is printed, with its stage" "$work/out" \
  "Memory the busiest GPU holds at its peak, in GB, and its pipeline stage"
expect_text "with the gated activation recomputed, as it says" "$work/out" \
  "recomputed: the experts' gated activation"
python3 - "$work/pp" "$work/pp-recompute" <<'PY'
import csv, json, sys
kept, recomputed = (json.load(open(d + "/summary.json")) for d in sys.argv[1:])
assert recomputed["run"]["sim_options"]["recompute_moe_act"] is True, recomputed["run"]
assert kept["run"]["sim_options"]["recompute_moe_act"] is False, kept["run"]
for a, b in zip(kept["planners"], recomputed["planners"]):
    k, r = a["peak_expert_activations"], b["peak_expert_activations"]
    assert k["token_assignments"] == r["token_assignments"] > 0, (k, r)
    assert k["bytes"] == k["token_assignments"] * (1024 + 3 * 512) * 2, k
    assert r["bytes"] == r["token_assignments"] * (1024 + 2 * 512) * 2, r
    assert len(r["stage_bytes"]) == 2 and max(r["stage_bytes"]) == r["bytes"], r
rows = list(csv.DictReader(open(sys.argv[2] + "/per_step.csv")))
assert rows and all(int(row["peak_expert_activation_bytes"]) > 0 for row in rows), rows
# What a GPU holds, worked by hand: one layer a stage of 1M dense parameters and 4 home experts
# of 3 x 1024 x 512, each a bf16 weight, a bf16 gradient and 12 bytes of optimizer state; one
# spare slot a layer, a bf16 weight and gradient, under topoep only; the dense activations of
# a model without attention heads: a token's input and normed input before the attention and
# again before the experts (4 x 1024 bf16), and 64 fp32 router probabilities, for each
# microbatch a stage holds (2 on the first under 1F1B, 1 on the last).
expert = 3 * 1024 * 512
tokens = recomputed["run"]["trace_metadata"]["tokens_per_rank"]
assert recomputed["run"]["pipeline_peak_activations"] == [2, 1], recomputed["run"]
dense = [held * tokens * (4 * 1024 * 2 + 64 * 4) for held in (2, 1)]
for planner in recomputed["planners"]:
    memory = planner["gpu_memory"]
    assert len(memory["stages"]) == 2, memory
    for s, (stage, activations) in enumerate(
            zip(memory["stages"], planner["peak_expert_activations"]["stage_bytes"])):
        assert stage["model_state"] == (1000000 + 4 * expert) * (2 + 2 + 12), stage
        assert stage["spare_slots"] == (expert * 2 * 2 if planner["planner"] == "topoep" else 0), stage
        assert stage["expert_activations"] == activations, stage
        assert stage["dense_activations"] == dense[s], (stage, dense)
        # The experts' output and its copy sorted back (4 home experts a GPU): 2 x 1024 x 2
        # bytes a token assignment of a layer, at most every assignment of the 16 GPUs'.
        assert 0 < stage["token_buffers"] <= 2 * 1024 * 2 * tokens * 8 * 16, stage
        assert stage["total"] == (stage["model_state"] + stage["spare_slots"] + activations +
                                  stage["token_buffers"] + dense[s]), stage
    assert memory["bytes"] == memory["stages"][memory["stage"]]["total"], memory
    assert memory["bytes"] == max(s["total"] for s in memory["stages"]), memory
PY
expect "summary.json and per_step.csv record them, and what a GPU holds" 0 $?
# MLA's up-projections: only a model with MLA has them to recompute.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --recompute-mla-up-proj \
  --out "$work/no-mla" >"$work/out" 2>&1
expect "simulate refuses to recompute up-projections a model does not have" 2 $?
expect_text "naming the flag and the model" "$work/out" \
  "error: --recompute-mla-up-proj: applies to multi-head latent attention, and model 'small' has none (its attention_kv_lora_rank is 0)"
[[ ! -e "$work/no-mla" ]]
expect "and writes no outputs" 0 $?
for recompute in "" "--recompute-layernorm --recompute-mla-up-proj"; do
  # shellcheck disable=SC2086  # the flags split into words
  "$topoep" simulate --trace "$work/lite.trace" --topology "$work/topo.json" --planners topoep,static \
    $recompute --out "$work/lite${recompute:+-recomputed}" >"$work/out" 2>&1
  expect "simulate runs DeepSeek-V2-Lite ${recompute:-keeping every activation}" 0 $?
done
expect_text "and says what it recomputes" "$work/out" "recomputed: the norms and MLA's up-projections"
python3 - "$work/lite" "$work/lite-recomputed" <<'PY'
import json, sys
kept, recomputed = (json.load(open(d + "/summary.json")) for d in sys.argv[1:])
options = recomputed["run"]["sim_options"]
assert options["recompute_layernorm"] and options["recompute_mla_up_proj"], options
for a, b in zip(kept["planners"], recomputed["planners"]):
    k, r = (p["gpu_memory"]["stages"][0]["dense_activations"] for p in (a, b))
    assert 0 < r < k, (k, r)
    assert b["step_time_us"] > a["step_time_us"], (a["step_time_us"], b["step_time_us"])
PY
expect "it holds fewer dense activations and reruns the up-projections' GEMMs" 0 $?
# An MTP module: its projection and head pass on the last stage; a model without a head has none.
"$topoep" simulate --trace "$work/lite.trace" --topology "$work/topo.json" --planners topoep,static \
  --mtp-layers 1 --out "$work/lite-mtp" >"$work/out" 2>&1
expect "simulate trains an MTP module" 0 $?
expect_text "and says what the trace's layers stand for" "$work/out" "Training 1 multi-token-prediction module (--mtp-layers): the trace's 1 layer stands for 27 routed layers, the model's 26 and the modules' 1"
python3 - "$work/lite" "$work/lite-mtp" <<'PY'
import json, sys
without, mtp = (json.load(open(d + "/summary.json")) for d in sys.argv[1:])
assert mtp["run"]["sim_options"]["mtp_layers"] == 1, mtp["run"]["sim_options"]
assert without["run"]["sim_options"]["mtp_layers"] == 0
for a, b in zip(without["planners"], mtp["planners"]):
    assert b["step_time_us"] > a["step_time_us"], (a["step_time_us"], b["step_time_us"])
    k, m = (p["gpu_memory"]["stages"][0]["dense_activations"] for p in (a, b))
    assert m > k, (k, m)  # a second pass through the head, with its softmax
PY
expect "it takes longer and holds a second head pass's activations" 0 $?
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners static --mtp-layers 1 --out "$work/no-head" >"$work/out" 2>&1
expect "simulate refuses an MTP module a model without a head cannot have" 2 $?
expect_text "naming the flag and the model" "$work/out" \
  "error: --mtp-layers: each module passes through the output head, and model 'small' has none (its vocab_size is 0)"
[[ ! -e "$work/no-head" ]]
expect "and writes no outputs there" 0 $?
# The memory-bound kernels at the HBM bandwidth: every planner's step longer, the header line
# giving the bytes, summary.json saying so.
"$topoep" simulate --trace "$work/lite.trace" --topology "$work/topo.json" --planners topoep,static \
  --memory-bound-kernels --out "$work/lite-kernels" >"$work/out" 2>&1
expect "simulate prices the memory-bound kernels" 0 $?
expect_text "and says at what bandwidth" "$work/out" "Memory-bound kernels at the HBM's"
python3 - "$work/lite" "$work/lite-kernels" <<'PY'
import json, sys
without, kernels = (json.load(open(d + "/summary.json")) for d in sys.argv[1:])
assert kernels["run"]["sim_options"]["memory_bound_kernels"] is True, kernels["run"]["sim_options"]
assert without["run"]["sim_options"]["memory_bound_kernels"] is False
assert kernels["run"]["solver_cost"]["compute_ps_per_token"] > without["run"]["solver_cost"]["compute_ps_per_token"]
for a, b in zip(without["planners"], kernels["planners"]):
    assert b["step_time_us"] > a["step_time_us"], (a["step_time_us"], b["step_time_us"])
PY
expect "every step takes longer and the planners weigh the experts' kernels" 0 $?
# FP8 GEMMs: the compute at the fp8 peak, a shorter step, said in summary.json; refused on a GPU
# without an fp8 peak.
"$topoep" simulate --trace "$work/lite.trace" --topology "$work/topo.json" --planners topoep,static \
  --fp8-gemms --out "$work/lite-fp8" >"$work/out" 2>&1
expect "simulate runs the GEMMs in fp8" 0 $?
python3 - "$work/lite" "$work/lite-fp8" <<'PY'
import json, sys
bf16, fp8 = (json.load(open(d + "/summary.json")) for d in sys.argv[1:])
assert bf16["run"]["gemm_precision"] == "bf16" and fp8["run"]["gemm_precision"] == "fp8", fp8["run"]
# The attention core stays bf16 at the topology's (a file of the H800 preset's) efficiencies.
assert fp8["run"]["attention_efficiency"] == bf16["run"]["attention_efficiency"], fp8["run"]
assert bf16["run"]["attention_efficiency"]["from"] == "topology", bf16["run"]
for a, b in zip(bf16["planners"], fp8["planners"]):
    assert b["step_time_us"] < a["step_time_us"], (a["step_time_us"], b["step_time_us"])
    assert b["per_step_us"]["compute"] < a["per_step_us"]["compute"], (a, b)
PY
expect "its compute and step are shorter, and summary.json says fp8" 0 $?
"$topoep" simulate --trace "$work/lite.trace" --topology a100-8x8 --nodes 2 --planners topoep,static \
  --fp8-gemms --out "$work/lite-a100" >"$work/out" 2>&1
expect "simulate refuses fp8 GEMMs on an A100" 2 $?
expect_text "naming the flag and the GPU" "$work/out" \
  "error: --fp8-gemms: the GPU of a100-2x8 (A100 SXM4 80GB) has no fp8 peak"
[[ ! -e "$work/lite-a100" ]]
expect "and writes no outputs" 0 $?
not_text() { ! grep -qF "$2" "$1"; }
not_text "$work/out" "does not fit as run"
expect "no note where what a GPU holds fits in its memory" 0 $?
# The distributed optimizer over two copies updates 1/32 of the dense parameters and half the
# home experts; bf16 moments keep 8 bytes of state for each; the gradients at fp32.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --dense-sync distributed \
  --data-parallel 2 --optimizer-state-bytes 8 --dense-grad-bytes 4 --out "$work/zero1" \
  >"$work/out" 2>&1
expect "simulate counts the optimizer state a GPU keeps" 0 $?
python3 - "$work/zero1/summary.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
assert summary["run"]["sim_options"]["optimizer_state_bytes_per_param"] == 8, summary["run"]
held = 2 * (1000000 + 4 * 3 * 1024 * 512)
owned = 2 * (1000000 / 32 + 4 * 3 * 1024 * 512 / 2)
for planner in summary["planners"]:
    stage = planner["gpu_memory"]["stages"][0]
    assert stage["model_state"] == round(held * (2 + 4) + owned * 8), (stage, held, owned)
PY
expect "summary.json's model state shares the optimizer state, not the weights" 0 $?
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --optimizer-state-bytes 1000 >"$work/out" 2>&1
expect "simulate refuses an optimizer state of 1000 bytes a parameter" 2 $?
expect_text "naming the flag" "$work/out" "--optimizer-state-bytes: must be in [0, 1000)"
# A GPU too small for them: the note names the planners, the GPU and its memory.
edit_json "$work/topo.json" "$work/tiny-hbm.json" 'd["gpu"]["hbm_capacity_gb"] = 0.001'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/tiny-hbm.json" \
  --model "$work/model16.json" --planners topoep,static,ideal >"$work/out" 2>&1
expect "simulate runs on a GPU too small for what it holds" 0 $?
tr '\n' ' ' <"$work/out" >"$work/out.flat"  # the note is wrapped to the terminal's width
expect_text "and names the GPU and its memory" "$work/out.flat" \
  "Note: the busiest GPU holds more than its 0.001 GB of memory (H800 SXM5 80GB) under"
expect_text "under every planner (the ideal is a bound, not a plan), and what would hold less" \
  "$work/out.flat" \
  "under every planner, before what is not counted: this layout does not fit as run. Less is held with more pipeline stages (--pipeline-stages), the distributed optimizer (--dense-sync distributed, over --data-parallel copies), fewer spare slots (--slots), recomputing the expert activation and the norms (--recompute-moe-act, --recompute-layernorm) or fewer tokens a microbatch."
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-layers 2,1 >"$work/out" 2>&1
expect "simulate rejects stages' layers that do not add up to the trace's" 2 $?
expect_text "naming the flag and both counts" "$work/out" \
  "error: --pipeline-layers: place 3 MoE layers, but the trace has 2"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-layers 1,1 \
  --out "$work/pp-layers" >"$work/out" 2>&1
expect "simulate takes the stages' layers, which set the stages" 0 $?
python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))["run"]["sim_options"]; sys.exit(o["pipeline_stages"] != 2 or o["pipeline_layers"] != [1, 1])' \
  "$work/pp-layers/summary.json"
expect "summary.json records each stage's layers" 0 $?
# Virtual stages: two chunks a stage need two stages; the chunks' layers set the stages.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --virtual-stages 2 >"$work/out" 2>&1
expect "simulate rejects virtual stages on one pipeline stage" 2 $?
expect_text "naming the flag" "$work/out" \
  "error: --virtual-stages: interleaves the chunks of at least 2 pipeline stages"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --virtual-stages 2 \
  --pipeline-layers 1,1,1 >"$work/out" 2>&1
expect "simulate rejects chunks' layers that the virtual stages do not divide" 2 $?
expect_text "naming both flags" "$work/out" \
  "error: --pipeline-layers: names 3 chunks, not a multiple of --virtual-stages 2"
"$topoep" trace synth --out "$work/pp4.trace" --ranks 16 --experts 64 --layers 4 --steps 1 \
  --microbatches 2 >/dev/null 2>&1
"$topoep" simulate --trace "$work/pp4.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --virtual-stages 2 \
  --pipeline-layers 1,2,0,1 --out "$work/pp-virtual" >"$work/out" 2>&1
expect "simulate rejects an empty chunk" 2 $?
expect_text "naming the flag" "$work/out" \
  "error: --pipeline-layers: every stage (chunk) holds at least one layer"
[[ ! -e "$work/pp-virtual" ]]
expect "and writes no outputs" 0 $?
"$topoep" simulate --trace "$work/pp4.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --virtual-stages 2 \
  --pipeline-layers 1,1,1,1 --out "$work/pp-virtual" >"$work/out" 2>&1
expect "simulate runs virtual stages" 0 $?
expect_text "and advises a layout of chunks" "$work/out" \
  "Stage layouts these records predict the shortest step for"
expect_text "and says how the chunks lie" "$work/out" \
  "2 pipeline stages of 2 chunks each, chunks of 1, 1, 1, 1 MoE layers (chunk c on stage c mod 2)"
python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))["run"]["sim_options"]; sys.exit(o["pipeline_stages"] != 2 or o["virtual_stages"] != 2 or o["pipeline_layers"] != [1, 1, 1, 1])' \
  "$work/pp-virtual/summary.json"
expect "summary.json records the chunks" 0 $?
# DualPipe: half the microbatches from each end, so at least two a stage.
"$topoep" simulate --trace "$work/pp4.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-stages 2 \
  --pipeline-schedule dualpipe --out "$work/pp-dual" >"$work/out" 2>&1
expect "simulate rejects DualPipe with fewer than two microbatches a stage" 2 $?
expect_text "naming the flag and both counts" "$work/out" \
  "error: --pipeline-schedule: dualpipe needs the trace's microbatches a step (2) to be even and at least twice the pipeline stages (4)"
[[ ! -e "$work/pp-dual" ]]
expect "and writes no outputs" 0 $?
"$topoep" trace synth --out "$work/pp-dual.trace" --ranks 16 --experts 64 --layers 4 --steps 1 \
  --microbatches 4 >/dev/null 2>&1
"$topoep" simulate --trace "$work/pp-dual.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-stages 3 \
  --pipeline-schedule dualpipe >"$work/out" 2>&1
expect "simulate rejects DualPipe on an odd number of stages" 2 $?
expect_text "naming the flag" "$work/out" \
  "error: --pipeline-schedule: dualpipe needs an even number of pipeline stages, at least 2 (got 3)"
"$topoep" simulate --trace "$work/pp-dual.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-stages 2 \
  --pipeline-schedule dualpipe --timeline "$work/pp-dual-timeline.json" \
  --out "$work/pp-dual" >"$work/out" 2>&1
expect "simulate runs DualPipe" 0 $?
expect_text "and says how the chunks lie" "$work/out" \
  "2 pipeline stages run by DualPipe: chunks of 2, 2 MoE layers, stage s holding chunks s and 1 - s"
python3 - "$work/pp-dual/summary.json" "$work/pp-dual-timeline.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))["run"]["sim_options"]
assert o["pipeline_schedule"] == "dualpipe" and o["pipeline_stages"] == 2, o
names = {e["name"].split(" ")[0] for e in json.load(open(sys.argv[2]))["traceEvents"] if e["ph"] == "X"}
assert {"forward", "backward", "weight"} <= names, names  # weight gradients run apart
PY
expect "summary.json records the schedule and the timeline draws split weight gradients" 0 $?
"$topoep" simulate --trace "$work/pp-dual.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-schedule dualpipev \
  --pipeline-layers 1,1,2 >"$work/out" 2>&1
expect "simulate rejects DualPipeV chunks that do not pair up into stages" 2 $?
expect_text "naming the flag" "$work/out" \
  "error: --pipeline-layers: names 3 chunks, not a multiple of DualPipeV's 2 a stage"
"$topoep" simulate --trace "$work/pp-dual.trace" --topology "$work/topo.json" \
  --model "$work/model16.json" --planners topoep,static --pipeline-schedule dualpipev \
  --pipeline-layers 1,1,1,1 --out "$work/pp-dualv" >"$work/out" 2>&1
expect "simulate runs DualPipeV, its chunks' layers setting the stages" 0 $?
expect_text "and says how the V lies" "$work/out" \
  "2 pipeline stages run by DualPipeV: chunks of 1, 1, 1, 1 MoE layers as a V, stage s holding chunks s and 3 - s"

"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --dense-grad-bytes 9 >"$work/out" 2>&1
expect "simulate rejects dense gradients wider than 8 bytes" 2 $?
expect_text "the dense gradients' error names the flag typed" "$work/out" \
  "error: --dense-grad-bytes: must be 0 to 8"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,static --dense-grad-bytes 0 --out "$work/no_allreduce" >"$work/out" 2>&1
expect "simulate leaves the dense all-reduce out when asked" 0 $?
expect_text "summary.json records the dense gradients' width" "$work/no_allreduce/summary.json" \
  '"dense_grad_bytes": 0'
expect_text "and an all-reduce of no time" "$work/no_allreduce/summary.json" '"time_us": 0.0'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --dense-sync zero3 >"$work/out" 2>&1
expect "simulate rejects an unknown dense sync" 2 $?
expect_text "the bad dense sync is named" "$work/out" "--dense-sync"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,static --dense-sync distributed --out "$work/zero1" >"$work/out" 2>&1
expect "simulate takes the distributed optimizer" 0 $?
expect_text "summary.json records the dense sync" "$work/zero1/summary.json" '"dense_sync": "distributed"'
expect_text "and its parameter all-gather" "$work/zero1/summary.json" '"parameter_gather"'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --data-parallel 0 --out "$work/no_groups" >"$work/out" 2>&1
expect "simulate rejects zero data-parallel groups" 2 $?
expect_text "the groups' error names the flag typed" "$work/out" "--data-parallel"
expect "and writes nothing" 1 "$(test -e "$work/no_groups"; echo $?)"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,static --data-parallel 4 --out "$work/groups" >"$work/out" 2>&1
expect "simulate takes data-parallel groups" 0 $?
expect_text "summary.json records the groups" "$work/groups/summary.json" '"data_parallel": 4'
expect_text "and the experts' sync between them" "$work/groups/summary.json" '"expert_gradients"'
expect_text "per_step.csv has its column" "$work/groups/per_step.csv" 'expert_grad_sync_us'
expect_text "the header says the groups route alike" "$work/out" \
  "4 data-parallel groups, routing alike"
expect_text "and so does summary.json" "$work/groups/summary.json" \
  '"data_parallel_routing": "alike"'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --nodes 1 \
  --model "$work/model16.json" --planners topoep,static --data-parallel 2 \
  --out "$work/groups_apart" >"$work/out" 2>&1
expect "simulate takes a trace of each group's own ranks" 0 $?
expect_text "the header says each group routes its own ranks" "$work/out" \
  "2 data-parallel groups, each routing its own 8 of the trace's 16 ranks"
expect_text "and so does summary.json" "$work/groups_apart/summary.json" \
  '"data_parallel_routing": "per group"'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --nodes 1 \
  --model "$work/model16.json" --planners topoep,static --data-parallel 2 --explain 0:0:0 \
  >"$work/out" 2>&1
expect "simulate explains a record of groups apart" 0 $?
expect_text "the first group's" "$work/out" "TopoEP on step 0, microbatch 0, layer 0 of group 0"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --nodes 1 \
  --model "$work/model16.json" --planners topoep,static --data-parallel 2 --explain 0:0:0:1 \
  >"$work/out" 2>&1
expect "simulate explains another group's record" 0 $?
expect_text "the group asked for" "$work/out" "TopoEP on step 0, microbatch 0, layer 0 of group 1"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --nodes 1 \
  --model "$work/model16.json" --planners topoep,static --data-parallel 2 --explain 0:0:0:2 \
  >"$work/out" 2>&1
expect "simulate --explain past the groups exits 2" 2 $?
expect_text "the groups are counted" "$work/out" \
  "--explain: step 0, microbatch 0, layer 0, group 2: the trace has 2 data-parallel groups routed apart (0 to 1)"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --nodes 1 \
  --model "$work/model16.json" --data-parallel 3 >"$work/out" 2>&1
expect "simulate rejects ranks that are neither one group's nor every group's" 2 $?
expect_text "the error says what would fit" "$work/out" "it may also have 24, each group's own"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,static --topoep-ib-slack 0.05 --out "$work/slack" >"$work/out" 2>&1
expect "simulate takes an IB load slack" 0 $?
expect_text "summary.json records the IB load slack" "$work/slack/summary.json" \
  '"topoep_ib_load_slack": 0.05'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --topoep-ib-slack 1.5 >"$work/out" 2>&1
expect "simulate rejects an IB load slack above 1" 2 $?
expect_text "the bad slack is named" "$work/out" "topoep-ib-slack"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,static --dispatcher deepep --out "$work/deepep" >"$work/out" 2>&1
expect "simulate takes DeepEP's dispatch" 0 $?
expect_text "the header says the dispatch is DeepEP's" "$work/out" "DeepEP's dispatch"
expect_text "summary.json records the dispatcher" "$work/deepep/summary.json" '"dispatcher": "deepep"'
# DeepEP's fixed buffers for the 16 GPUs (a recommended config): in the memory and its caption.
tr '\n' ' ' <"$work/out" >"$work/out-joined"
expect_text "the memory caption gives DeepEP's fixed buffers" "$work/out-joined" \
  "and DeepEP's fixed NVLink and RDMA buffers,"
python3 - "$work/deepep/summary.json" <<'PY'
import json, sys
for planner in json.load(open(sys.argv[1]))["planners"]:
    stages = planner["gpu_memory"]["stages"]
    assert all(stage["deepep_buffers"] > 0 for stage in stages), stages
PY
expect "summary.json records DeepEP's fixed buffers on every stage" 0 $?
# Where TopoEP's step is longer than static's (DeepEP's sends, 256 tokens a GPU: sim/README.md,
# "Against the paper"), a note says what its replicas saved against what they and the solves
# cost; where it is shorter, none.
"$topoep" trace synth --out "$work/small.trace" --experts 64 --top-k 6 --ranks 16 --layers 4 \
  --microbatches 4 --steps 2 --tokens-per-rank 256 --seed 1 >/dev/null 2>&1
"$topoep" simulate --trace "$work/small.trace" --topology h800-4x8 --nodes 2 \
  --model deepseek-v2-lite --planners topoep,static --dispatcher deepep >"$work/out" 2>&1
expect "simulate runs the small DeepEP case" 0 $?
expect_text "a note says TopoEP's step is longer than static's" "$work/out" \
  "Note: topoep's step is 0.991x static's here. Per step its plans save 0.69 ms of MoE time"
expect_text "and names the syncs the replicas' gradients displace" "$work/out" \
  "syncs 0.18 ms more"
"$topoep" simulate --trace "$work/small.trace" --topology h800-4x8 --nodes 2 \
  --model deepseek-v2-lite --planners topoep,static >"$work/out" 2>&1
expect "and the same per assignment" 0 $?
expect_no_text "where TopoEP is faster, no such note" "$work/out" "x static's here"
# Pipelined, the parts sum over the stages (as the table's); where no replica paid, only the
# solves are named.
"$topoep" trace synth --out "$work/small8.trace" --experts 64 --top-k 6 --ranks 16 --layers 8 \
  --microbatches 8 --steps 2 --tokens-per-rank 256 --seed 2 --hot-ratio 1.5 >/dev/null 2>&1
"$topoep" simulate --trace "$work/small8.trace" --topology h800-4x8 --nodes 2 \
  --model deepseek-v2-lite --planners topoep,static --dispatcher deepep --pipeline-stages 2 \
  >"$work/out" 2>&1
expect "simulate runs it on 2 pipeline stages" 0 $?
expect_text "the note sums over the stages" "$work/out" "Per step (summed over the stages) its plans"
expect_text "and names only the solves where nothing was saved" "$work/out" \
  "save no MoE time, while its GPU solves take 1.28 ms."
# TopoEP's IB-opened run follows the dispatcher unless set; summary.json says which ran.
expect_text "under DeepEP TopoEP runs no IB-opened run" "$work/deepep/summary.json" \
  '"topoep_ib_opened_run": 0'
expect_text "per assignment it does" "$work/slack/summary.json" '"topoep_ib_opened_run": 1'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,static --topoep-ib-opened-run 0 --out "$work/no-ib-run" >"$work/out" 2>&1
expect "simulate takes --topoep-ib-opened-run 0" 0 $?
expect_text "summary.json records it" "$work/no-ib-run/summary.json" '"topoep_ib_opened_run": 0'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --topoep-ib-opened-run 2 >"$work/out" 2>&1
expect "simulate rejects an IB-opened run other than 0 or 1" 2 $?
expect_text "the bad value is named" "$work/out" "topoep-ib-opened-run"
# A model whose tokens pick from 2 of its 4 expert groups (a node's experts each, on 2 x 8 GPUs):
# the estimate conditions on the groups, the header says so, --check counts the same sends.
edit_json "$work/model16.json" "$work/model16-groups.json" \
  'd["expert_groups"], d["expert_groups_per_token"] = 4, 2'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" \
  --model "$work/model16-groups.json" --planners topoep,static --dispatcher deepep --check \
  --out "$work/deepep-groups" >"$work/out" 2>&1
expect "simulate prices DeepEP's dispatch under group-limited routing" 0 $?
expect_text "and says a token's experts lie in a few groups" "$work/out" \
  "DeepEP's dispatch (distinct tokens estimated from the counts, a token's experts in at most 2 of 4 groups)"
python3 - "$work/deepep" "$work/deepep-groups" <<'PY'
import json, sys
free, limited = (json.load(open(d + "/summary.json")) for d in sys.argv[1:])
ib = lambda run: {p["planner"]: p["per_step_bytes"]["ib_dispatch"] for p in run["planners"]}
assert ib(limited)["static"] != ib(free)["static"], (ib(free), ib(limited))
PY
expect "and sends other IB bytes than without the groups" 0 $?
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --dispatcher nccl >"$work/out" 2>&1
expect "simulate rejects an unknown dispatcher" 2 $?
expect_text "the bad dispatcher is named" "$work/out" "--dispatcher"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,static --topoep-max-moves 4 --out "$work/capped" >"$work/out" 2>&1
expect "simulate takes a move cap" 0 $?
expect_text "summary.json records the move cap" "$work/capped/summary.json" '"topoep_max_moves": 4'
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners eplb,static --topoep-max-moves 4 >"$work/out" 2>&1
expect "simulate refuses a move cap without the topoep planner" 2 $?
expect_text "the cap and its planners are named" "$work/out" "--topoep-max-moves: applies to the topoep, topoep-flat and topoep-balance planners"
# The ablation of TopoEP's topology awareness: the same solver on one flat NVLink domain.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,topoep-flat,static --topoep-max-moves 16 --check --out "$work/flat" >"$work/out" 2>&1
expect "simulate runs topoep-flat, every plan valid" 0 $?
expect_text "the table compares TopoEP with its hierarchy-blind self" "$work/out" "TopoEP step-time speedup over: topoep-flat"
expect_text "summary.json has its row" "$work/flat/summary.json" '"planner": "topoep-flat"'
# The ablation of its cost model: the same solver with every byte free to it.
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,topoep-balance,static --check --out "$work/balance" >"$work/out" 2>&1
expect "simulate runs topoep-balance, every plan valid" 0 $?
expect_text "the table compares TopoEP with its balance-only self" "$work/out" "TopoEP step-time speedup over: topoep-balance"
expect_text "and a note says what it is" "$work/out" "Note: topoep-balance is TopoEP's solver weighing compute alone"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep-flat,static --topoep-ib-slack 0.05 >"$work/out" 2>&1
expect "topoep-flat has no IB to trade: the slack is refused without topoep" 2 $?
expect_text "and its one planner named" "$work/out" "--topoep-ib-slack: applies to the topoep planner, which --planners does not list"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners eplb-microbatch,static --eplb-period 2 >"$work/out" 2>&1
expect "simulate refuses an EPLB option without the eplb planner" 2 $?
expect_text "the option and its planner are named" "$work/out" "--eplb-period: applies to the eplb planner, which --planners does not list"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners eplb-microbatch,static --eplb-groups model --out "$work/groups" >"$work/out" 2>&1
expect "simulate takes the model's expert groups for EPLB" 0 $?
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["run"]["planner_options"]["eplb_groups"] == "model"' \
  "$work/groups/summary.json"
expect "summary.json names EPLB's groups" 0 $?
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners eplb,static --eplb-groups 0 >"$work/out" 2>&1
expect "simulate refuses zero expert groups" 2 $?
expect_text "and says what it takes" "$work/out" "--eplb-groups: must be 'nodes', 'model' or a count of groups, got '0'"
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,static --eplb-groups 4 >"$work/out" 2>&1
expect "simulate refuses EPLB's groups without an EPLB planner" 2 $?
"$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
  --planners topoep,static --host-roundtrip-us 5 >"$work/out" 2>&1
expect "a host round trip without a planner that plans on the host is refused" 2 $?
expect_text "the flag and every planner it applies to are named" "$work/out" "--host-roundtrip-us: applies to the eplb, eplb-microbatch and shadowing planners, which --planners does not list"
for us in 0 100; do
  "$topoep" simulate --trace "$work/sim.trace" --topology "$work/topo.json" --model "$work/model16.json" \
    --planners eplb-microbatch,static --host-roundtrip-us $us --out "$work/roundtrip-$us" >/dev/null 2>&1
  expect "simulate --host-roundtrip-us $us exits 0" 0 $?
done
python3 - "$work/roundtrip-0" "$work/roundtrip-100" <<'PY'
import json, sys
def overhead(d):
    s = json.load(open(d + "/summary.json"))
    return next(p for p in s["planners"] if p["planner"] == "eplb-microbatch")["per_step_us"]["planner_overhead"]
# 100 us more on each of a step's 2 microbatches x 2 layers.
assert abs(overhead(sys.argv[2]) - overhead(sys.argv[1]) - 400.0) < 1e-6, (overhead(sys.argv[1]), overhead(sys.argv[2]))
PY
expect "EPLB every microbatch pays the round trip on every record" 0 $?
"$topoep" simulate --trace "$work/missing.trace" >"$work/out" 2>&1
expect "simulate rejects a missing trace" 2 $?
expect_text "the missing trace is named" "$work/out" "missing.trace"

# sweep: results, shards and merge, and grid errors that name the key.
cat >"$work/grid.json" <<'JSON'
{"planners": ["topoep", "static"], "model": ["$work/model16.json"], "topology": ["$work/topo.json"],
 "trace": [{"synthetic": {"steps": 1, "layers": 1, "tokens_per_rank": 64}}], "slots": [0, 1]}
JSON
sed -i "s#\$work#$work#g" "$work/grid.json"
"$topoep" sweep --grid "$work/grid.json" --out "$work/sweep" --check >"$work/out" 2>&1
expect "sweep exits 0" 0 $?
expect_text "sweep --check finds every plan valid" "$work/out" "--check: every plan of the points run was valid"
expect_no_text "no eplb note without eplb" "$work/out" "eplb's first replan"
expect_no_text "nothing against the ideal without it" "$work/out" "of the ideal's"
[[ $(wc -l <"$work/sweep/results.csv") == 5 ]]
expect "sweep writes a header and one row per point and planner" 0 $?
"$topoep" sweep --grid "$work/grid.json" --out "$work/sweep" >"$work/out" 2>&1
expect "sweep refuses to overwrite results without --resume" 2 $?
expect_text "the results file and --resume are named" "$work/out" "sweep/results.jsonl: exists: pass --resume"
"$topoep" sweep --grid "$work/grid.json" --out "$work/shards" --shard 1/2 >"$work/out" 2>&1
expect "sweep shard exits 0" 0 $?
"$topoep" sweep merge --grid "$work/grid.json" --out "$work/shards" >"$work/out" 2>&1
expect "merge with a missing shard exits 2" 2 $?
expect_text "the missing shard is named" "$work/out" "shard 0 of 2 is missing"
# EPLB replans at the start of step eplb_period_steps: of two 2-step points, the one with a
# period of 2 never does, and the sweep says so.
cat >"$work/eplb-grid.json" <<'JSON'
{"planners": ["eplb", "static"], "model": ["$work/model16.json"], "topology": ["$work/topo.json"],
 "trace": [{"synthetic": {"steps": 2, "layers": 1, "tokens_per_rank": 64}}], "slots": [1],
 "eplb_period_steps": [1, 2]}
JSON
sed -i "s#\$work#$work#g" "$work/eplb-grid.json"
"$topoep" sweep --grid "$work/eplb-grid.json" --out "$work/eplb-sweep" >"$work/out" 2>&1
expect "sweep with eplb exits 0" 0 $?
expect_text "the point where eplb never replanned is counted" "$work/out" \
  "Note: in 1 of the 2 points the trace ends before eplb's first replan"
# With the ideal among the planners the sweep says how close TopoEP comes to it.
sed 's/"static"\]/"static", "ideal"]/' "$work/grid.json" >"$work/ideal-grid.json"
"$topoep" sweep --grid "$work/ideal-grid.json" --out "$work/ideal-sweep" >"$work/out" 2>&1
expect "sweep with the ideal exits 0" 0 $?
tr '\n' ' ' <"$work/out" >"$work/out-joined"  # the note is wrapped
expect_text "TopoEP's distance to the ideal is summed up" "$work/out-joined" \
  "of the ideal's (geometric mean of percent_of_ideal over the 2 points that ran both)"
echo '{"trace": [{"synthetic": {}}], "slots": []}' >"$work/bad-grid.json"
"$topoep" sweep --grid "$work/bad-grid.json" --out "$work/bad-sweep" >"$work/out" 2>&1
expect "a grid with an empty list exits 2" 2 $?
expect_text "the empty key is named" "$work/out" "bad-grid.json: field 'slots'"

echo "$failures failure(s)"
[[ $failures == 0 ]]
