# Shared by the shell tests: count failures, print one line per check. Source it, then end
# with: echo "$failures failure(s)"; [[ $failures == 0 ]]
failures=0

expect() {  # expect NAME WANTED_RC ACTUAL_RC
  if [[ $2 != "$3" ]]; then
    echo "FAIL: $1: exit code $3, expected $2"
    failures=$((failures + 1))
  else
    echo "ok: $1"
  fi
}

expect_text() {  # expect_text NAME FILE TEXT
  if ! grep -qF -- "$3" "$2"; then
    echo "FAIL: $1: '$3' not in output:"
    cat "$2"
    failures=$((failures + 1))
  else
    echo "ok: $1"
  fi
}

edit_json() {  # edit_json IN OUT STATEMENT: writes IN's JSON to OUT (may be IN) after the
  # Python STATEMENT has changed it, the document being named d.
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))
PY
}

expect_no_text() {  # expect_no_text NAME FILE TEXT
  if grep -qF -- "$3" "$2"; then
    echo "FAIL: $1: '$3' in output:"
    cat "$2"
    failures=$((failures + 1))
  else
    echo "ok: $1"
  fi
}
