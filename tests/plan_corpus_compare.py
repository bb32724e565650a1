#!/usr/bin/env python3
"""Compares two `plan_corpus_hash --each` outputs: which plans moved, and their predicted times.

    bazel run -c opt //tests:plan_corpus_hash -- --each > before.txt   # at the old commit
    bazel run -c opt //tests:plan_corpus_hash -- --each > after.txt    # with the change
    tests/plan_corpus_compare.py before.txt after.txt

Each `--each` line is "<case> <plan hash> <predicted ps>". Prints the number of plans that
moved, how many are predicted faster and slower, the geometric mean of after/before over the
moved plans, the extremes, and (with --list) every moved case.
"""
import math
import sys


def read(path):
    plans = {}
    with open(path) as lines:
        for line in lines:
            fields = line.split()
            if len(fields) < 3 or not fields[-1].lstrip("-").isdigit():
                continue  # a group's summary line
            plans[" ".join(fields[:-2])] = (fields[-2], int(fields[-1]))
    return plans


def main(argv):
    args = [a for a in argv[1:] if a != "--list"]
    if len(args) != 2:
        sys.exit(__doc__)
    before, after = read(args[0]), read(args[1])
    if before.keys() != after.keys():
        sys.exit("the two outputs list different cases: run both on the same corpus")
    moved = [(case, before[case][1], after[case][1])
             for case in before if before[case][0] != after[case][0]]
    print(f"{len(moved)} of {len(before)} plans moved")
    ratios = [a / b for _, b, a in moved if b > 0]
    if ratios:
        faster = sum(r < 1 for r in ratios)
        slower = sum(r > 1 for r in ratios)
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"predicted faster {faster}, slower {slower}, equal {len(ratios) - faster - slower}")
        print(f"after/before: geomean {geomean:.5f}, best {min(ratios):.5f}, worst {max(ratios):.5f}")
    if "--list" in argv:
        for case, b, a in moved:
            print(f"{case}: {b} -> {a} ps ({a / b - 1 if b else 0:+.3%})")


if __name__ == "__main__":
    main(sys.argv)
