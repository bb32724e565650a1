#!/usr/bin/env bash
# The notebooks run headless on data this test generates (a replay, a sweep, a solver report),
# the plot module writes every key PNG, and the committed notebooks carry no outputs.
# Usage: notebooks_test.sh TOPOEP SOLVER_BENCH SOLVER_REPORT NOTEBOOK...
set -uo pipefail
topoep=$(realpath "$1")
bench=$(realpath "$2")
solver_report=$(realpath "$3")
shift 3
notebooks=()
for notebook in "$@"; do notebooks+=("$(realpath "$notebook")"); done
work=${TEST_TMPDIR:-$(mktemp -d)}
export HOME=$work MPLBACKEND=Agg PATH=/usr/bin:$PATH  # Debian's python3 with pandas
source "$(dirname "$0")/expect.sh"

"$topoep" trace synth --out "$work/trace" --experts 256 --layers 4 --steps 2 \
  --tokens-per-rank 2048 --seed 3 >/dev/null
expect "synthetic trace" 0 $?
"$topoep" simulate --trace "$work/trace" --out "$work/replay" --rank-loads --threads 2 >/dev/null
expect "replay with rank loads" 0 $?
cat >"$work/grid.json" <<'JSON'
{"planners": ["topoep", "eplb", "static", "ideal"],
 "trace": [{"synthetic": {"steps": 2, "layers": 2, "tokens_per_rank": 2048, "seed": 4}}],
 "nodes": [2, 4], "slots": [0, 1], "ib_gb_per_s": [25, 50], "dispatcher": ["alltoall", "deepep"],
 "pipeline_stages": [1, 2]}
JSON
"$topoep" sweep --grid "$work/grid.json" --out "$work/sweep" --threads 2 >/dev/null
expect "sweep" 0 $?
TOPOEP_BIN=$topoep TOPOEP_SOLVER_BENCH=$bench "$solver_report" "$work/solver" --quick >"$work/out"
expect "solver report" 0 $?
expect_text "the solver report gives its determinism verdict" "$work/out" "determinism: all 16 plans bit-identical across host x 1, host x 2, host x 8"
# Plan quality: a header and 4 cases x 4 layers, TopoEP never predicted slower than static.
python3 - "$work/solver/quality.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 16, len(rows)
assert all(float(r["predicted_us_topoep"]) <= float(r["predicted_us_static"]) for r in rows)
assert all(int(r["ib_bytes_topoep"]) <= int(r["ib_bytes_static"]) for r in rows)
PY
expect "solver report quality.csv" 0 $?

notebook_dir=$(dirname "${notebooks[0]}")
for notebook in "${notebooks[@]}"; do
  [[ $notebook == *.ipynb ]] || continue
  name=$(basename "$notebook")
  python3 - "$notebook" <<'PY'
import json, sys
cells = json.load(open(sys.argv[1]))["cells"]
dirty = [i for i, c in enumerate(cells)
         if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))]
sys.exit(f"cells {dirty} carry outputs: clear them before committing" if dirty else 0)
PY
  expect "$name is committed without outputs" 0 $?
  TOPOEP_REPLAY_DIR=$work/replay TOPOEP_SWEEP_DIR=$work/sweep TOPOEP_SOLVER_DIR=$work/solver \
    jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=300 \
    --output-dir "$work/executed" "$notebook" >"$work/nbconvert.log" 2>&1
  rc=$?
  [[ $rc == 0 ]] || tail -30 "$work/nbconvert.log"
  expect "$name executes" 0 $rc
done

# The plots of results directory $work/$1, into $work/png-$1; and whether one was drawn.
plots() {
  python3 "$notebook_dir/topoep_plots.py" "$work/$1" --out "$work/png-$1" >"$work/out"
  expect "plots of the $1" 0 $?
}
drawn() { [[ -s "$work/png-$1/$2.png" ]]; expect "$3" 0 $?; }
not_drawn() { [[ ! -e "$work/png-$1/$2.png" ]]; expect "$3" 0 $?; }
for results in replay sweep solver; do plots "$results"; done
for png in straggler_by_layer load_heatmaps bytes_by_link expert_activations gpu_memory \
  gain_over_baselines; do
  [[ -s "$work/png-replay/$png.png" ]]
  expect "replay plot $png.png" 0 $?
done
# The featured axes, and any other the sweep varied (pipeline_stages).
for png in gain_vs_slots gain_vs_ib_nvlink_ratio gain_vs_nodes gain_vs_dispatcher \
  gain_vs_pipeline_stages step_vs_memory; do
  [[ -s "$work/png-sweep/$png.png" ]]
  expect "sweep plot $png.png" 0 $?
done
[[ -s "$work/png-solver/solver_latency.png" ]]
expect "solver latency plot" 0 $?
# A sweep of pipeline schedules, which hold different activations: step time against them.
cat >"$work/schedules.json" <<'JSON'
{"planners": ["topoep", "static"],
 "trace": [{"synthetic": {"steps": 1, "microbatches": 4, "layers": 4, "tokens_per_rank": 512}}],
 "pipeline_stages": [2], "pipeline_schedule": ["1f1b", "dualpipe", "dualpipev"]}
JSON
"$topoep" sweep --grid "$work/schedules.json" --out "$work/schedules" --threads 2 >/dev/null
expect "sweep of pipeline schedules" 0 $?
plots schedules
drawn schedules step_vs_activations "step time against activations"
not_drawn sweep step_vs_activations "none where every point holds the same"
# A pipelined replay with its timeline beside it: the stages' schedule; none without stages.
"$topoep" simulate --trace "$work/trace" --planners topoep,static --pipeline-stages 2 \
  --virtual-stages 2 --out "$work/piped" --timeline "$work/piped/timeline.json" >/dev/null
expect "pipelined replay with a timeline" 0 $?
plots piped
drawn piped pipeline_schedule "pipeline schedule plot"
not_drawn replay pipeline_schedule "no pipeline schedule plot of one stage"
python3 "$notebook_dir/topoep_plots.py" "$work" >"$work/out" 2>&1
expect "a directory without results is bad input" 2 $?
expect_text "it says what it looked for" "$work/out" "no toolkit results found"
mkdir -p "$work/damaged"
cp "$work/replay/per_layer.csv" "$work/replay/per_step.csv" "$work/damaged/"
echo '{"planners": [' >"$work/damaged/summary.json"
python3 "$notebook_dir/topoep_plots.py" "$work/damaged" >"$work/out" 2>&1
expect "a damaged summary.json is bad input" 2 $?
expect_text "one line names the file" "$work/out" "tools/plot: error: $work/damaged: $work/damaged/summary.json: "
grep -q Traceback "$work/out"
expect "no traceback" 1 $?
[[ -z "$(ls -A "$work/damaged/plots" 2>/dev/null)" ]]
expect "no plot of the damaged run is left" 0 $?

echo "$failures failure(s)"
[[ $failures == 0 ]]
