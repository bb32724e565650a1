#!/usr/bin/python3
"""How far `simulate --a2a-overlap F` is from pairing each record with its true partner.

The replay prices records alone, in parallel, so CostModel::overlap_all_to_alls() takes the
paired microbatch's all-to-alls to be the record's own (sim/README.md, "All-to-alls behind
compute"). This script re-prices the hidden time from a simulation's per_layer.csv with the
partner's own transfers and prints each planner's step both ways:
- the forward of microbatch m > 0 hides f x min(the backward of microbatch m - 1's combine
  grad + dispatch grad, its own link-idle forward window);
- the backward of microbatch m < M - 1 hides f x min(the forward of microbatch m + 1's
  dispatch + combine, 2 x dense forward + its expert backward compute).
Partners are the same layer (the replay's pairing) or, with --mirrored, layer L - 1 - l (a
schedule that overlaps the forward's first layer with the backward's first, the model's last).

The forward window is dense forward + expert compute less what the record's replica weights
and migrations took of the attention window. That last part is not in per_layer.csv: it is
nothing where the record moved no weights, and otherwise the window is recovered from
`a2a_hidden_us` where the record's own transfers outlast it. Where neither holds, the window
is only known to be at least those transfers and at most dense forward + compute, so a step
is printed as a range (the count of such records is printed too). The planners' decisions stay those the replay made.

Usage: bench/a2a_partner_check.py SIM_OUT_DIR [--mirrored]
(SIM_OUT_DIR: `topoep simulate ... --a2a-overlap F --out SIM_OUT_DIR`, F > 0). Debian's
python3 with pandas.
"""
import argparse
import json
import sys
from pathlib import Path

import pandas as pd

# per_layer.csv holds µs to 6 decimals: what "equal" means when comparing them.
EPSILON_US = 1e-3


def fail(message):
    print(f"a2a_partner_check: {message}", file=sys.stderr)
    sys.exit(2)


def load(directory):
    summary_path, rows_path = directory / "summary.json", directory / "per_layer.csv"
    for path in (summary_path, rows_path):
        if not path.is_file():
            fail(f"{path}: not found (write it with topoep simulate --out)")
    run = json.loads(summary_path.read_text())["run"]
    fraction = run["sim_options"].get("a2a_overlap_fraction", 0.0)
    if fraction <= 0:
        fail(f"{summary_path}: run.sim_options.a2a_overlap_fraction is {fraction}: nothing hid "
             "(simulate with --a2a-overlap F, F > 0)")
    microbatches = run["trace_metadata"]["microbatches"]
    if microbatches < 2:
        fail(f"{summary_path}: run.trace_metadata.microbatches is 1: no record has a partner")
    rows = pd.read_csv(rows_path)
    if "outside_forward_us" not in rows:
        fail(f"{rows_path}: no column outside_forward_us (topoep simulate writes it since "
             "2026-12-03): simulate again")
    steps = {p["planner"]: p["step_time_us"] for p in json.loads(summary_path.read_text())["planners"]}
    return fraction, microbatches, rows[rows.planner != "ideal"].copy(), steps


def own_parts(rows, f, microbatches):
    """Each record's transfers and windows, and the two halves of its own-partner hidden time."""
    # The attention's own forward: the overlap windows leave the outside share out.
    attention = rows.dense_forward_us - rows.outside_forward_us
    rows["forward_a2a"] = rows.dispatch_us + rows.combine_us
    rows["backward_a2a"] = rows.combine_grad_us + rows.dispatch_grad_us
    rows["backward_window"] = 2 * attention + rows.compute_grad_us
    has_later = rows.microbatch < microbatches - 1
    has_earlier = rows.microbatch > 0
    rows["hidden_backward_own"] = has_later * f * rows[["forward_a2a", "backward_window"]].min(axis=1)
    rows["hidden_forward_own"] = (rows.a2a_hidden_us - rows.hidden_backward_own).where(has_earlier, 0)
    # Whole where the record moved no weights (nothing took the attention window); else
    # recovered where the record's own transfers outlasted it; else bounded.
    whole = attention + rows.compute_us
    unweighted = rows.nvlink_weight_bytes + rows.ib_weight_bytes == 0
    recovered = rows.hidden_forward_own < f * rows.backward_a2a - EPSILON_US
    known = unweighted | recovered
    # The simulator's own pairing, re-derived: where the window is whole, the forward's hidden
    # time must be what CostModel::overlap_all_to_alls() gave, or this script is out of date.
    expected = f * pd.concat([rows.backward_a2a, whole], axis=1).min(axis=1)
    drift = (rows.hidden_forward_own - expected).abs()[unweighted & has_earlier]
    if (drift > EPSILON_US).any():
        fail(f"per_layer.csv: a2a_hidden_us differs from this script's pairing by up to "
             f"{drift.max():.3f} us: the script no longer matches the cost model")
    window = whole.where(unweighted, rows.hidden_forward_own / f)
    rows["forward_window_low"] = window.where(known, rows.backward_a2a)
    rows["forward_window_high"] = window.where(known, whole)
    return int((has_earlier & ~known).sum())


def partner_delta(rows, f, mirrored):
    """Per planner: (low, high) of the step-summed change, true partner minus own, in µs."""
    layers = rows.layer.max() + 1
    key = ["step", "planner", "microbatch", "layer"]
    partner = rows[key + ["forward_a2a", "backward_a2a"]].rename(
        columns={"forward_a2a": "partner_forward_a2a", "backward_a2a": "partner_backward_a2a"})
    if mirrored:
        partner["layer"] = layers - 1 - partner.layer
    earlier = partner[key + ["partner_backward_a2a"]].assign(microbatch=partner.microbatch + 1)
    later = partner[key + ["partner_forward_a2a"]].assign(microbatch=partner.microbatch - 1)
    paired = rows.merge(earlier, on=key, how="left").merge(later, on=key, how="left")
    backward = (f * paired[["partner_forward_a2a", "backward_window"]].min(axis=1, skipna=False)).fillna(0)
    delta = {}
    for bound, window in (("low", "forward_window_low"), ("high", "forward_window_high")):
        forward = (f * paired[["partner_backward_a2a", window]].min(axis=1, skipna=False)).fillna(0)
        # What hides less lengthens the step.
        change = (paired.hidden_forward_own - forward) + (paired.hidden_backward_own - backward)
        delta[bound] = change.groupby(paired.planner).sum()
    return delta


def span(low, high, spec):
    """One value where the range's ends print alike, else both."""
    low_text, high_text = format(low, spec), format(high, spec)
    return low_text if low_text == high_text else f"{low_text} to {high_text}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sim_out_dir", type=Path)
    parser.add_argument("--mirrored", action="store_true",
                        help="pair layer l's forward with layer L - 1 - l's backward")
    args = parser.parse_args()
    f, microbatches, rows, steps = load(args.sim_out_dir)
    unknown = own_parts(rows, f, microbatches)
    delta = partner_delta(rows, f, args.mirrored)
    num_steps = rows.step.nunique()
    print(f"a2a_overlap_fraction {f}, {microbatches} microbatches a step, partners: "
          f"{'layer L - 1 - l' if args.mirrored else 'the same layer'}; "
          f"{unknown} forward windows known only as a range")
    print(f"{'planner':<16} {'own partner ms':>15} {'true partner ms':>21} {'change':>17}")
    true = {}
    for planner, step_us in steps.items():
        if planner not in delta["low"]:
            continue
        # The ranges' ends: more window hides more (a shorter step).
        low = step_us + delta["high"][planner] / num_steps
        high = step_us + delta["low"][planner] / num_steps
        true[planner] = (low, high)
        print(f"{planner:<16} {step_us / 1e3:>15.1f} {span(low / 1e3, high / 1e3, '.1f'):>21} "
              f"{span(low / step_us - 1, high / step_us - 1, '+.3%'):>17}")
    if "topoep" in true:
        for planner, (low, high) in true.items():
            if planner == "topoep":
                continue
            own = steps[planner] / steps["topoep"]
            ratio = span(low / true["topoep"][1], high / true["topoep"][0], ".4f")
            print(f"topoep over {planner}: own partner {own:.4f}x, true partner {ratio}x")


if __name__ == "__main__":
    main()
