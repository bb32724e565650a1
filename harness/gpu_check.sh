#!/usr/bin/env bash
# The GPU check, for one GPU and under 5 minutes: builds with --config=cuda, runs the GPU tests
# (CUDA plans bit-identical to the host's on the golden corpus; the device plan hash), measures
# the device TopoEP solve latency and one expert's GEMM timings at DeepSeek-V3's dimensions with
# cuBLAS, fits the topology's grouped-GEMM efficiency curve from them, runs the solver report on
# both backends (tools/solver_report: host and CUDA plans validated and compared), and runs the
# harness's cuda mode (NCCL + cuBLAS) end to end on one rank.
#
# On a GPU machine without Bazel or Debian's packages (the device machines lent to this
# project), build the programs here first with tools/gpu_bundle and set TOPOEP_GPU_BUNDLE to
# that bundle: nothing is installed or built then, cuBLAS and NCCL are looked up where the
# CUDA Python wheels put them, and the harness's step, which needs MPI, is skipped where
# mpirun is missing.
# With TOPOEP_BENCH_COUNTS naming your own routing (a `topoep solve --counts` file or a trace
# directory), the device solve is timed on it too, planned on TOPOEP_BENCH_TOPOLOGY for
# TOPOEP_BENCH_MODEL with TOPOEP_BENCH_SLOTS spare slots (bench/README.md; defaults h800-4x8,
# deepseek-v3, 1), into own_routing_solve.csv.
# Usage: [TOPOEP_GPU_BUNDLE=DIR] harness/gpu_check.sh [OUT_DIR (gpu-check)] [BASE_TOPOLOGY (h200-8x8)]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-gpu-check}")
topology=${2:-h200-8x8}
cd "$root"
bundle=${TOPOEP_GPU_BUNDLE:-}
if [[ -n $bundle ]]; then
  bin=$(realpath "$bundle")
  [[ -f $bin/MANIFEST ]] || {
    echo "gpu_check: $bundle: no MANIFEST: not a bundle from tools/gpu_bundle" >&2
    exit 2
  }
  head -2 "$bin/MANIFEST"
  # cuBLAS and NCCL for CUDA 13: the toolkit's, else the Python wheels'.
  libs=$bin/lib
  for name in libcublas.so.13 libnccl.so.2; do
    found=$(find /usr/local/cuda/lib64 /usr/lib /opt /usr/local/lib -name "$name" 2>/dev/null |
      head -1 || true)
    [[ -n $found ]] && libs=$libs:$(dirname "$found")
  done
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  tools/setup
  bin=$root/bazel-bin
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
# A CSV as a table where `column` is installed (the device machines' image lacks it).
show_csv() { if command -v column >/dev/null; then column -s, -t <"$1"; else cat "$1"; fi; }
# GPU time is scarce: a failing step is reported at the end, after every other measurement.
failed=()
skipped=()
if [[ -n $bundle ]]; then
  for test in topoep_cuda_test device_plan_hash_test; do
    "$bin/tests/$test" || failed+=("the GPU test $test")
  done
else
  bazel test --config=cuda --test_output=errors //tests:topoep_cuda_test //tests:device_plan_hash_test ||
    failed+=("the GPU tests (topoep_cuda_test, device_plan_hash_test)")
  bazel build --config=cuda //harness:gpu_microbench //harness:topoep-harness //tools/cli:topoep \
    //bench:topoep_solver_bench
fi
topoep=$bin/tools/cli/topoep
mkdir -p "$out"
own=()
if [[ -n ${TOPOEP_BENCH_COUNTS:-} ]]; then
  own=(--counts "$(realpath "$TOPOEP_BENCH_COUNTS")" --slots "${TOPOEP_BENCH_SLOTS:-1}"
    --topology "${TOPOEP_BENCH_TOPOLOGY:-h800-4x8}" --model "${TOPOEP_BENCH_MODEL:-deepseek-v3}")
fi
if "$bin/harness/gpu_microbench" --out "$out" "${own[@]}"; then
  echo "device solve latency (us per layer):"
  show_csv "$out/solve_latency.csv"
  echo "one layer's device solve by phase (us):"
  show_csv "$out/solve_phases.csv"
  if [[ -f $out/own_routing_solve.csv ]]; then
    echo "the device solve of $TOPOEP_BENCH_COUNTS (its layers in one launch; phases of the first):"
    show_csv "$out/own_routing_solve.csv"
  fi
  # calibrate refuses a curve above the base GPU's bf16 peak (a base of other hardware than
  # this GPU): the measurements stay in $out for a rerun with the right base.
  "$topoep" calibrate --measurements "$out" --topology "$topology" \
    --out "$out/calibrated-topology.json" ||
    failed+=("calibrate against $topology (gemm_samples.csv is in $out)")
else
  failed+=("gpu_microbench (device solve latency, cuBLAS GEMM curve)")
fi

# The solver report on both backends: 16 skewed layers solved on the host (1, 2, 8 threads) and
# on the GPU, every plan validated, and the verdict that all are bit-identical.
TOPOEP_BIN=$topoep TOPOEP_SOLVER_BENCH=$bin/bench/topoep_solver_bench \
  tools/solver_report "$out/solver-report" --quick ||
  failed+=("the solver report (host and CUDA plans of 16 layers)")

# The cuda mode on one rank: DeepSeek-V3's expert sizes, every expert on this GPU (S = 0), a
# few records; the outputs must match the static plan's within bf16 tolerance.
if ! command -v mpirun >/dev/null; then
  skipped+=("the harness's cuda mode: no mpirun on this machine")
else
  "$topoep" topology show h200-8x8 --json | python3 -c '
import json, sys
t = json.load(sys.stdin)
t["name"], t["nodes"], t["gpus_per_node"] = "one-gpu", 1, 1
json.dump(t, open(sys.argv[1], "w"))' "$out/one-gpu.json"
  rm -rf "$out/trace"
  "$topoep" trace synth --out "$out/trace" --ranks 1 --gpus-per-node 1 \
    --experts 256 --layers 2 --steps 1 --tokens-per-rank 4096 >/dev/null
  if mpirun --allow-run-as-root -np 1 "$bin/harness/topoep-harness" run --mode cuda \
    --trace "$out/trace" --topology "$out/one-gpu.json" --model deepseek-v3 --slots 0 \
    --hidden 7168 --ffn 2048 --tolerance 3e-2 --out "$out/harness-cuda"; then
    show_csv "$out/harness-cuda/per_layer.csv" | cut -c1-160
  else
    failed+=("the harness's cuda mode")
  fi
fi
if ((${#skipped[@]})); then printf 'gpu_check: skipped: %s\n' "${skipped[@]}"; fi
if ((${#failed[@]})); then
  printf 'gpu_check: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "gpu_check: every step passed"
