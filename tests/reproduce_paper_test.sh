#!/usr/bin/env bash
# tools/reproduce_paper runs end to end on the shared real data (a quick slice): every table row
# is written and no half-written summary is left. Skips itself without TOPOEP_SHARED_DIR.
# The plot module draws its gain-vs-skew figure from the output.
# Usage: reproduce_paper_test.sh TOPOEP REPRODUCE_PAPER NOTEBOOK_FILES...
set -uo pipefail
topoep=$(realpath "$1")
reproduce=$(realpath "$2")
shift 2
plots=""
for file in "$@"; do [[ $file == *topoep_plots.py ]] && plots=$(realpath "$file"); done
if [[ -z ${TOPOEP_SHARED_DIR:-} ]]; then
  echo "skipped: TOPOEP_SHARED_DIR is not set (tools/test sets it)"
  exit 0
fi
work=${TEST_TMPDIR:-$(mktemp -d)}
export HOME=$work PATH=/usr/bin:$PATH  # Debian's python3 with pandas
source "$(dirname "$0")/expect.sh"

TOPOEP_BIN=$topoep "$reproduce" "$work/out" --quick >"$work/log" 2>&1
expect "reproduce_paper --quick" 0 $?
for row in "ESFT law (real) | DeepSeek-V2-Lite" "ESFT intent (real) | DeepSeek-V2-Lite" \
  "SGLang prefill_in4096 shares (real) | DeepSeek-V3" "FLAME-MoE-290M pretraining routing (real)" \
  "| deepseek-v3 | 1.25 |" \
  "| qwen3-30b-a3b | 5 |"; do
  expect_text "summary row: $row" "$work/out/summary.md" "$row"
done
# --quick's one-step traces end before EPLB's first replan: the summary says why its column
# repeats static's.
expect_text "EPLB note" "$work/out/summary.md" "it ran the home layout throughout"
expect_text "a column for TopoEP blind to the hierarchy" "$work/out/summary.md" "| vs topoep-flat |"
expect_text "and one for it weighing compute alone" "$work/out/summary.md" "| vs topoep-balance |"
python3 - "$work/out/summary.md" <<'PY'
import sys
real = [line.split("|")[1:-1] for line in open(sys.argv[1]) if "(real" in line]
# data, model, static max/mean, static, EPLB, EPLB per microbatch, topoep-flat, topoep-balance,
# MoE, ideal
assert real and all(len(r) == 10 and r[6].strip().endswith("x") and r[7].strip().endswith("x")
                    for r in real), real
PY
expect "every real-data row has its topoep-flat and topoep-balance speedups" 0 $?
[[ ! -e $work/out/summary.md.tmp ]]
expect "no half-written summary" 0 $?
expect_text "the summary names the dispatcher" "$work/out/summary.md" "--dispatcher alltoall"
TOPOEP_BIN=$topoep "$reproduce" "$work/deepep" --quick --dispatcher deepep --a2a-overlap 0.5 \
  --memory-bound-kernels >"$work/log" 2>&1
expect "reproduce_paper --quick --dispatcher deepep --a2a-overlap 0.5 --memory-bound-kernels" 0 $?
expect_text "every row priced DeepEP's way" "$work/deepep/summary.md" "--dispatcher deepep"
expect_text "and with half the all-to-alls behind compute" "$work/deepep/summary.md" \
  "--a2a-overlap 0.5"
expect_text "and with the memory-bound kernels priced" "$work/deepep/summary.md" \
  "priced at the HBM bandwidth (\`--memory-bound-kernels\`)"
expect_text "which the default run leaves out, saying so" "$work/out/summary.md" \
  "not priced (no \`--memory-bound-kernels\`)"
expect_text "the summary gives TopoEP's IB slack per assignment" "$work/out/summary.md" \
  "up to 5% above the mean load"
expect_text "and under DeepEP's dispatch" "$work/deepep/summary.md" "up to 1% above the mean load"
python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))["run"]["sim_options"]; sys.exit(o["dispatcher"] != "deepep" or o["a2a_overlap_fraction"] != 0.5 or not o["memory_bound_kernels"])' \
  "$work/deepep/runs/esft-law/summary.json"
expect "the runs were simulated with all three" 0 $?
grep -q '"a2a_overlap_fraction":0.5.*"dispatcher":"deepep".*"memory_bound_kernels":true' "$work/deepep/skew/results.jsonl"
expect "and the skew sweep" 0 $?
TOPOEP_BIN=$topoep "$reproduce" "$work/bad" --dispatcher nccl >"$work/log" 2>&1
expect "an unknown dispatcher is bad usage" 2 $?
expect_text "and named" "$work/log" "--dispatcher: must be alltoall or deepep"
TOPOEP_BIN=$topoep "$reproduce" "$work/bad" --a2a-overlap 2 >"$work/log" 2>&1
expect "an overlap above 1 is bad usage" 2 $?
expect_text "and named too" "$work/log" "--a2a-overlap: must be a number from 0 to 1"
MPLBACKEND=Agg python3 "$plots" "$work/out" --out "$work/plots" >/dev/null
expect "plot module" 0 $?
[[ -s $work/plots/gain_vs_skew.png ]]
expect "gain_vs_skew.png written" 0 $?

# The rows follow the shared folder's contents: another ESFT task, another statistics file.
other=$work/other-shared/traces
mkdir -p "$other/esft-deepseek-v2-lite" "$other/flame-moe-290m" "$other/sglang-deepseek-v3-stats"
ln -s "$TOPOEP_SHARED_DIR/traces/esft-deepseek-v2-lite/intent" "$other/esft-deepseek-v2-lite/chat"
ln -s "$TOPOEP_SHARED_DIR/traces/sglang-deepseek-v3-stats/prefill_in512.json" \
  "$other/sglang-deepseek-v3-stats/decode.json"
# And another FLAME-MoE model, of its own shape (32 experts, top-4; 16 sequences of 32 tokens).
mkdir -p "$other/flame-moe-xl/encoder_16seqs_32tok"
python3 - "$other/flame-moe-xl/encoder_16seqs_32tok" <<'PY'
import random, sys
random.seed(3)
for layer in range(2, 6):
    with open(f"{sys.argv[1]}/flame-moe-xl_layer{layer}_encoder.csv", "w") as f:
        f.write("layer_id,token_id," + ",".join(f"expert_{e}" for e in range(32)) + "\n")
        for token in range(16 * 32):
            row = [0.0] * 32
            for e in random.sample(range(32), 4):
                row[e] = round(random.random(), 4)
            f.write(f"{layer},{token}," + ",".join(map(str, row)) + "\n")
PY
TOPOEP_SHARED_DIR=$work/other-shared TOPOEP_BIN=$topoep "$reproduce" "$work/out" --quick \
  >"$work/other.log" 2>&1
expect "reproduce_paper --quick on other shared data" 0 $?
expect_text "a row for the task there is" "$work/out/summary.md" "| ESFT chat (real) | DeepSeek-V2-Lite |"
expect_text "a row for the statistics file there is" "$work/out/summary.md" "| SGLang decode shares (real) | DeepSeek-V3 |"
expect_text "a row for the other FLAME-MoE model, priced with its own experts and top-k" \
  "$work/out/summary.md" \
  "| FLAME-MoE-XL pretraining routing (real) | DeepSeek-V2-Lite dimensions, 32 experts, top-4 |"
if grep -q "ESFT law\|prefill_in4096\|FLAME-MoE-290M" "$work/out/summary.md"; then
  echo "FAIL: rows of data the folder does not hold (an earlier run's)"
  failures=$((failures + 1))
fi

TOPOEP_SHARED_DIR=$work/nowhere TOPOEP_BIN=$topoep "$reproduce" "$work/bad" --quick \
  >"$work/bad.log" 2>&1
expect "missing shared data" 2 $?
expect_text "names the missing folder" "$work/bad.log" "$work/nowhere/traces"
mkdir -p "$work/empty-shared/traces/flame-moe-290m"
TOPOEP_SHARED_DIR=$work/empty-shared TOPOEP_BIN=$topoep "$reproduce" "$work/bad" --quick \
  >"$work/bad.log" 2>&1
expect "shared data with nothing to replay" 2 $?
expect_text "says what it looked for" "$work/bad.log" "holds no ESFT task, FLAME encoder dump or SGLang statistics file"

# A run that fails on the way leaves no summary, not even an earlier run's.
mkdir -p "$work/stale/runs"
echo "an earlier summary" >"$work/stale/summary.md"
printf '#!/bin/sh\nexit 1\n' >"$work/failing-topoep"
chmod +x "$work/failing-topoep"
TOPOEP_BIN=$work/failing-topoep "$reproduce" "$work/stale" --quick >"$work/stale.log" 2>&1
[[ $? != 0 && ! -e $work/stale/summary.md ]]
expect "a failed run leaves no summary" 0 $?
echo "$failures failure(s)"
[[ $failures == 0 ]]
