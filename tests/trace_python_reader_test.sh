#!/usr/bin/env bash
# The numpy reader (tools/read_trace.py) on traces the C++ writer produced: same records, same
# totals as `topoep trace info`, and a clear failure on a truncated chunk.
# Usage: trace_python_reader_test.sh TOPOEP READ_TRACE_PY
set -euo pipefail
topoep=$1 reader=$2
work=${TEST_TMPDIR:-$(mktemp -d)}
# Debian's python3 has numpy (python3-numpy, installed by tools/setup); another python3 first
# on PATH (pyenv, a venv) may not.
python=python3
for candidate in /usr/bin/python3 python3; do
  if "$candidate" -c "import numpy" 2>/dev/null; then python=$candidate; break; fi
done
rm -rf "$work/a.trace" "$work/b.trace"
"$topoep" trace synth --out "$work/a.trace" --ranks 16 --experts 32 --top-k 4 --layers 3 --steps 2 --microbatches 2 --tokens-per-rank 128 >/dev/null
"$topoep" trace synth --out "$work/b.trace" --ranks 8 --experts 16 --top-k 2 --tokens-per-rank 40000 --seed 9 >/dev/null  # I32 counts
for trace in "$work/a.trace" "$work/b.trace"; do
  "$topoep" trace info "$trace" --json >"$work/info.json"
  "$python" - "$reader" "$trace" "$work/info.json" <<'PY'
import json, sys, importlib.util
spec = importlib.util.spec_from_file_location("read_trace", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
metadata, records = module.read_trace(sys.argv[2])
info = json.load(open(sys.argv[3]))
count = total = 0
expected = 0
for step, microbatch, layer, counts in records:
    assert counts.shape == (metadata["num_ranks"], metadata["num_experts"]), counts.shape
    assert (counts.sum(axis=1) == metadata["tokens_per_rank"] * metadata["top_k"]).all()
    assert (step, microbatch, layer) == (expected // (metadata["microbatches"] * metadata["num_layers"]),
                                         expected // metadata["num_layers"] % metadata["microbatches"],
                                         expected % metadata["num_layers"])
    expected += 1
    count += 1
    total += int(counts.sum())
assert count == info["records"], (count, info["records"])
assert total == info["assignments"], (total, info["assignments"])
print("ok:", sys.argv[2], metadata["dtype"], count, "records", total, "assignments")
PY
done
# A truncated chunk must fail loudly, not yield garbage.
chunk=$(ls "$work/a.trace"/chunk-*.safetensors | head -n 1)
truncate -s -16 "$chunk"
"$python" "$reader" "$work/a.trace" >/dev/null 2>"$work/err" && rc=0 || rc=$?
if [[ $rc -ne 2 ]]; then
  echo "FAIL: the reader exited $rc on a truncated chunk, not 2"
  exit 1
fi
grep -q "^read_trace.py: error: .*chunk-000000.safetensors: .*truncated" "$work/err" ||
  { echo "FAIL: no one-line error naming the chunk in:"; cat "$work/err"; exit 1; }
if grep -q Traceback "$work/err"; then
  echo "FAIL: a traceback, not a message:"; cat "$work/err"; exit 1
fi
echo "ok: truncated chunk rejected"
# A directory of recorded data, not a trace: one line saying so, pointing at the importer.
mkdir -p "$work/raw"
"$python" "$reader" "$work/raw" >/dev/null 2>"$work/err" && rc=0 || rc=$?
[[ $rc -eq 2 ]] || { echo "FAIL: the reader exited $rc on a directory without a trace"; exit 1; }
grep -q "^read_trace.py: error: .*raw: not a TopoEP trace (no index.json); .*trace import" \
  "$work/err" || { echo "FAIL: no one-line error naming the directory in:"; cat "$work/err"; exit 1; }
echo "ok: a directory without a trace is named"
