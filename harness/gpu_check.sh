#!/usr/bin/env bash
# The GPU check, for one GPU and under 5 minutes: builds with --config=cuda, runs the GPU tests
# (CUDA plans bit-identical to the host's on the golden corpus; the device plan hash), measures
# the device TopoEP solve latency and one expert's GEMM timings at DeepSeek-V3's dimensions with
# cuBLAS, and fits the topology's grouped-GEMM efficiency curve from them.
# Usage: harness/gpu_check.sh [OUT_DIR (gpu-check)] [BASE_TOPOLOGY (h200-8x8)]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-gpu-check}")
topology=${2:-h200-8x8}
cd "$root"
tools/setup
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
bazel test --config=cuda --test_output=errors //tests:topoep_cuda_test //tests:device_plan_hash_test
bazel build --config=cuda //harness:gpu_microbench //tools/cli:topoep
mkdir -p "$out"
bazel-bin/harness/gpu_microbench --out "$out"
bazel-bin/tools/cli/topoep calibrate --measurements "$out" --topology "$topology" \
  --out "$out/calibrated-topology.json"
echo "device solve latency (us per layer):"
column -s, -t <"$out/solve_latency.csv"
