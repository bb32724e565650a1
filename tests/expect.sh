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

expect_no_text() {  # expect_no_text NAME FILE TEXT
  if grep -qF -- "$3" "$2"; then
    echo "FAIL: $1: '$3' in output:"
    cat "$2"
    failures=$((failures + 1))
  else
    echo "ok: $1"
  fi
}
