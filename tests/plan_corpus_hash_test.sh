#!/usr/bin/env bash
# The wide determinism check of solver/README.md ("Determinism") as a test: plan_corpus_hash's
# 2,960 plans, folded into one hash per group, must equal tests/golden/plan_corpus_hashes.txt.
# The 60 golden cases pin single plans; this pins the space around them. A change that moves a
# group says why in its commit message (then: plan_corpus_hash --each before and after, and
# tests/plan_corpus_compare.py). The DeepSeek-V3 shares groups need TOPOEP_SHARED_DIR.
# Usage: plan_corpus_hash_test.sh PLAN_CORPUS_HASH GOLDEN
set -uo pipefail
corpus=$1
golden=$2
source "$(dirname "$0")/expect.sh"
out=${TEST_TMPDIR:-$(mktemp -d)}/corpus.txt

"$corpus" >"$out" 2>&1
expect "plan_corpus_hash exits 0" 0 $?
while IFS= read -r line; do
  group=${line%%  *}
  if [[ $group == shares* && -z ${TOPOEP_SHARED_DIR:-} ]]; then
    echo "skipped: $group (TOPOEP_SHARED_DIR is not set)"
    continue
  fi
  expect_text "group '$group' keeps its combined hash" "$out" "$line"
done <"$golden"

echo "$failures failure(s)"
[[ $failures == 0 ]]
