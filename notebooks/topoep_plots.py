"""Plots of the TopoEP toolkit's outputs, shared by the notebooks and tools/plot.

Inputs are the files the toolkit writes:
  replay (topoep simulate --out DIR --rank-loads, or topoep demo): summary.json, per_layer.csv,
    per_step.csv, rank_loads.csv; with pipeline stages, timeline.json beside them (--timeline)
  sweep (topoep sweep --out DIR): results.csv
  solver report (tools/solver_report DIR): solver_bench.json, determinism.csv
  paper reproduction (tools/reproduce_paper DIR): skew/results.csv, runs/*/summary.json

Run as a program, it writes the key plots of a results directory as PNG files:
  python3 notebooks/topoep_plots.py RESULTS_DIR [--out PNG_DIR]
"""

import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # headless: files, not windows
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

BASELINES = ["eplb", "eplb-microbatch", "shadowing", "static", "topoep-flat", "topoep-balance"]


def read_json(path):
    """The parsed JSON file; a malformed one raises ValueError naming it."""
    with open(path) as f:
        try:
            return json.load(f)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None


def read_csv(path):
    """The CSV file as a DataFrame; a malformed one raises ValueError naming it."""
    try:
        return pd.read_csv(path)
    except ValueError as error:  # pandas' ParserError and EmptyDataError are ValueErrors
        raise ValueError(f"{path}: {error}") from None


# --- replay ---------------------------------------------------------------------------------

def load_replay(directory):
    """The outputs of one simulation: summary (dict) and per_layer, per_step, rank_loads
    (DataFrames; rank_loads is None when the run did not write it)."""
    summary = read_json(os.path.join(directory, "summary.json"))
    replay = {
        "summary": summary,
        "per_layer": read_csv(os.path.join(directory, "per_layer.csv")),
        "per_step": read_csv(os.path.join(directory, "per_step.csv")),
        "rank_loads": None,
    }
    loads = os.path.join(directory, "rank_loads.csv")
    if os.path.exists(loads):
        replay["rank_loads"] = read_csv(loads)
    return replay


def plot_straggler_by_layer(replay, ax=None):
    """MoE layer straggler time (forward + backward), averaged over records, per layer."""
    ax = ax or plt.subplots(figsize=(9, 4))[1]
    per_layer = replay["per_layer"]
    means = per_layer.groupby(["layer", "planner"])["moe_us"].mean().unstack("planner")
    order = [p["planner"] for p in replay["summary"]["planners"]]
    (means[order] / 1e3).plot(ax=ax, marker=".")
    ax.set_xlabel("MoE layer")
    ax.set_ylabel("straggler time per layer (ms, fwd + bwd)")
    ax.set_title("MoE layer time by planner")
    return ax


def plot_load_heatmaps(replay, planners=("static", "topoep"), step=0, microbatch=0):
    """GPU token load over the mean, layers x ranks, one panel per planner."""
    loads = replay["rank_loads"]
    if loads is None:
        raise ValueError("no rank_loads.csv: run simulate with --rank-loads")
    planners = [p for p in planners if p in set(loads["planner"])]
    fig, axes = plt.subplots(1, len(planners), figsize=(5 * len(planners), 4), squeeze=False)
    rank_columns = [c for c in loads.columns if c.startswith("rank_")]
    selected = loads[(loads["step"] == step) & (loads["microbatch"] == microbatch)]
    images = []
    for ax, planner in zip(axes[0], planners):
        rows = selected[selected["planner"] == planner].sort_values("layer")
        matrix = rows[rank_columns].to_numpy(dtype=float)
        matrix = matrix / matrix.mean(axis=1, keepdims=True)
        images.append(ax.imshow(matrix, aspect="auto", cmap="magma", vmin=0))
        ax.set_title(f"{planner}: load / mean (step {step}, mb {microbatch})")
        ax.set_xlabel("rank")
        ax.set_ylabel("MoE layer")
    vmax = max(image.get_clim()[1] for image in images)
    for image in images:
        image.set_clim(0, vmax)
    fig.colorbar(images[-1], ax=axes[0].tolist())
    return fig


def plot_bytes_by_link(replay, ax=None):
    """Bytes per step by link class (dispatch, replica weights, gradient reduction)."""
    ax = ax or plt.subplots(figsize=(8, 4))[1]
    rows = {}
    for p in replay["summary"]["planners"]:
        b = p["per_step_bytes"]
        rows[p["planner"]] = {
            "IB dispatch": b["ib_dispatch"],
            "IB weights + grads": b["ib_weights"] + b["ib_grad_reduce"],
            "NVLink dispatch": b["nvlink_dispatch"],
            "NVLink weights + grads": b["nvlink_weights"] + b["nvlink_grad_reduce"],
        }
    (pd.DataFrame(rows).T / 1e9).plot.bar(ax=ax, stacked=True)
    ax.set_ylabel("GB per step")
    ax.set_title("Traffic by link class")
    return ax


def has_expert_activations(replay):
    """Whether the run's summary.json records the expert activations its planners' busiest
    GPUs hold (simulations since 2026-12-04)."""
    return all("peak_expert_activations" in p for p in replay["summary"]["planners"])


def plot_expert_activations(replay, ax=None):
    """The expert activations each planner's busiest GPU holds for its backward at its peak
    (sim/README.md, "Expert activations held"), GB, with the ideal's mean as a line."""
    ax = ax or plt.subplots(figsize=(7, 4))[1]
    held = pd.Series({p["planner"]: p["peak_expert_activations"]["bytes"] / 1e9
                      for p in replay["summary"]["planners"]})
    ideal = held.pop("ideal") if "ideal" in held else None
    held.plot.bar(ax=ax, color="tab:purple")
    if ideal is not None:
        ax.axhline(ideal, color="black", linewidth=0.8, linestyle="--", label="ideal (the mean)")
        ax.legend()
    options = replay["summary"].get("run", {}).get("sim_options", {})
    recomputed = options.get("recompute_moe_act", False)
    ax.set_ylabel("GB on the busiest GPU")
    ax.set_title("Expert activations held at the peak" +
                 (" (gated activation recomputed)" if recomputed else ""))
    return ax


def has_gpu_memory(replay):
    """Whether the run's summary.json records what its planners' busiest GPUs hold in all
    (simulations since 2026-12-05)."""
    return all("gpu_memory" in p for p in replay["summary"]["planners"])


def plot_gpu_memory(replay, ax=None):
    """What each planner's busiest GPU holds at its peak, by part (sim/README.md, "Memory a GPU
    holds"), GB, stacked, with the GPU's memory as a line where the run knows it."""
    ax = ax or plt.subplots(figsize=(7, 4))[1]
    parts = {"model_state": "model state", "spare_slots": "spare slots",
             "expert_activations": "expert activations",
             "token_buffers": "token buffers",
             "dense_activations": "dense activations",
             "deepep_buffers": "DeepEP's buffers"}
    rows = {}
    for p in replay["summary"]["planners"]:
        memory = p["gpu_memory"]
        stage = memory["stages"][memory["stage"]]
        # Simulations before the dense activations (2026-12-05) or the buffers (2026-12-06)
        # were counted have none.
        rows[p["planner"]] = {label: stage.get(key, 0) / 1e9 for key, label in parts.items()}
    frame = pd.DataFrame.from_dict(rows, orient="index")[list(parts.values())]
    frame.plot.bar(ax=ax, stacked=True,
                   color=["tab:gray", "tab:orange", "tab:purple", "tab:pink", "tab:cyan",
                          "tab:olive"])
    run = replay["summary"].get("run", {})
    capacity = run.get("gpu_hbm_capacity_gb", 0)
    if capacity:
        ax.axhline(capacity, color="black", linewidth=0.8, linestyle="--",
                   label=f"the GPU's {capacity:g} GB")
    ax.legend()
    ax.set_ylabel("GB on the busiest GPU")
    stages = run.get("sim_options", {}).get("pipeline_stages", 1)
    ax.set_title("What the busiest GPU holds" +
                 (f" (its stage, of {stages})" if stages > 1 else "") +
                 "; the all-to-alls' dispatch-side buffers not counted")
    return ax


def plot_gain_over_baselines(replay, planner="topoep", ax=None):
    """Step-time speedup of `planner` over every other planner."""
    ax = ax or plt.subplots(figsize=(7, 4))[1]
    entry = next(p for p in replay["summary"]["planners"] if p["planner"] == planner)
    gains = pd.Series(entry["speedup_over"])
    gains.plot.bar(ax=ax, color="tab:green")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel(f"{planner} speedup (x)")
    ax.set_title(f"{planner} step-time speedup over each planner")
    return ax


def load_pipeline_schedule(path):
    """A pipelined run's --timeline (simulate --pipeline-stages P > 1): per planner, its
    slices as (stage, name, start_ms, end_ms), in {planner name: [...]}. None where the
    timeline has no stage tracks (one stage: a track per rank)."""
    events = read_json(path)["traceEvents"]
    planners = {e["pid"]: e["args"]["name"] for e in events
                if e.get("ph") == "M" and e.get("name") == "process_name"}
    stages = {(e["pid"], e["tid"]) for e in events
              if e.get("ph") == "M" and e.get("name") == "thread_name"
              and e["args"]["name"].startswith("stage ")}
    if not stages:
        return None
    schedule = {name: [] for name in planners.values()}
    for e in events:
        if e.get("ph") == "X" and (e["pid"], e["tid"]) in stages:
            start = e["ts"] / 1000
            schedule[planners[e["pid"]]].append((e["tid"], e["name"], start, start + e["dur"] / 1000))
    return schedule


def plot_pipeline_schedule(schedule, planners=("static", "topoep")):
    """Each planner's pipeline stages over one step, a row a stage: forwards, backwards, weight
    gradients run apart (DualPipe), and the rest (first-layer gathers, exposed syncs,
    optimizer); gaps are the stages' waits."""
    shown = [name for name in schedule if name.split(" (")[0] in planners] or list(schedule)
    stages = 1 + max(stage for name in shown for stage, *_ in schedule[name])
    fig, axes = plt.subplots(len(shown), 1, sharex=True, squeeze=False,
                             figsize=(10, 0.8 + 0.5 * stages * len(shown)))
    colors = {"forward": "tab:blue", "backward": "tab:orange", "weight": "tab:green"}
    for ax, name in zip(axes[:, 0], shown):
        for stage, slice_name, start, end in schedule[name]:
            color = colors.get(slice_name.split(" ")[0], "tab:gray")
            ax.broken_barh([(start, end - start)], (stage - 0.4, 0.8), color=color,
                           edgecolor="white", linewidth=0.3)
        ax.set_yticks(range(stages))
        ax.set_yticklabels([f"stage {s}" for s in range(stages)])
        ax.invert_yaxis()
        ax.set_title(name)
    axes[-1, 0].set_xlabel("ms into the step")
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in
               ("tab:blue", "tab:orange", "tab:green", "tab:gray")]
    fig.suptitle("Pipeline schedule of one step")
    fig.tight_layout()
    fig.legend(handles, ["forward", "backward", "weight gradients", "gathers, syncs, optimizer"],
               loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, fontsize="small")
    return fig


# --- sweeps ---------------------------------------------------------------------------------

def load_sweep(directory):
    """results.csv of a sweep, with the IB/NVLink bandwidth ratio added."""
    results = read_csv(os.path.join(directory, "results.csv"))
    results["ib_nvlink_ratio"] = results["ib_gb_per_s"] / results["nvlink_gb_per_s"]
    return results


def sweep_parameters(results):
    """A sweep's parameter columns: those between `point` and `planner` in results.csv (the
    metrics follow `planner`), and the derived IB/NVLink ratio."""
    columns = list(results.columns)
    return columns[columns.index("point") + 1:columns.index("planner")] + ["ib_nvlink_ratio"]


def speedups(results, planner="topoep"):
    """Per point, `planner`'s step-time speedup over each other planner (columns)."""
    times = results.pivot_table(index="point", columns="planner", values="step_time_us")
    gains = pd.DataFrame({other: times[other] / times[planner]
                          for other in times.columns if other not in (planner, "ideal")})
    parameters = results.drop_duplicates("point").set_index("point")
    return gains.join(parameters.drop(columns=["planner"]))


def plot_gain_vs(results, x, planner="topoep", ax=None):
    """Speedup of `planner` over each baseline as a function of parameter `x`: the geometric
    mean over the points that share a value of `x` (ratios average geometrically), which the
    y label says when other parameters vary."""
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    gains = speedups(results, planner)
    baselines = [b for b in BASELINES if b in gains.columns]
    means = np.exp(np.log(gains[baselines]).groupby(gains[x]).mean())
    if pd.api.types.is_numeric_dtype(gains[x]):
        means.plot(ax=ax, marker="o")
    else:  # named choices (the dispatcher): a group of bars each, every name on the axis
        means.plot.bar(ax=ax, rot=0)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel(x)
    if pd.api.types.is_integer_dtype(gains[x]):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    others = [c for c in sweep_parameters(results) if c != x and gains[c].nunique() > 1]
    ax.set_ylabel(f"{planner} speedup (x)" +
                  (f"\ngeomean over {', '.join(others)}" if others else ""))
    ax.legend(title="over")
    ax.set_title(f"{planner} speedup vs {x}")
    return ax


PIPELINE_COLUMNS = ["pipeline_schedule", "pipeline_stages", "virtual_stages", "pipeline_layers"]


def has_activation_tradeoff(results):
    """Whether the sweep's points hold different activations (pipeline_peak_activations:
    sweeps since 2026-12-04; empty in rows resumed from before)."""
    column = results.get("pipeline_peak_activations")
    return column is not None and column.dropna().nunique() > 1


def plot_step_vs_activations(results, planners=("topoep", "static")):
    """Each point's step time against the activations its pipeline's busiest stage holds
    (layer-microbatches), one series per planner, each point labelled with the pipeline
    parameters the sweep varies: what a schedule or layout buys in time for its memory."""
    ax = plt.subplots(figsize=(7, 4.5))[1]
    varied = [c for c in PIPELINE_COLUMNS if c in results and results[c].nunique() > 1]
    rows = results.dropna(subset=["pipeline_peak_activations"])
    for planner in [p for p in planners if p in set(rows["planner"])]:
        mine = rows[rows["planner"] == planner]
        ax.plot(mine["pipeline_peak_activations"], mine["step_time_us"] / 1e6, "o", label=planner)
        if planner != planners[0]:
            continue
        for _, row in mine.iterrows():
            label = (str(row[varied[0]]) if len(varied) == 1
                     else ", ".join(f"{c}={row[c]}" for c in varied))
            ax.annotate(label, (row["pipeline_peak_activations"], row["step_time_us"] / 1e6),
                        fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("activations the busiest stage holds (layer-microbatches)")
    ax.set_ylabel("step time (s)")
    ax.legend()
    ax.set_title("step time against activation memory")
    return ax


def has_memory_tradeoff(results):
    """Whether the sweep's points hold different memory on their busiest GPU (gpu_memory_bytes:
    sweeps since 2026-12-05; empty in rows resumed from before)."""
    column = results.get("gpu_memory_bytes")
    return column is not None and column.dropna().nunique() > 1


def plot_step_vs_memory(results, planners=("topoep", "eplb-microbatch", "static")):
    """Each point's step time against what its busiest GPU holds (GB: model state, spare slots,
    expert and dense activations, the loss's logits among the latter; sim/README.md, "Memory a
    GPU holds"), one series per planner, the
    first planner's points labelled with the parameters the sweep varies: what spare slots,
    pipeline layouts or recomputation buy in time for their memory."""
    ax = plt.subplots(figsize=(7, 4.5))[1]
    varied = [c for c in sweep_parameters(results) if results[c].nunique() > 1]
    rows = results.dropna(subset=["gpu_memory_bytes"])
    shown = [p for p in planners if p in set(rows["planner"])]
    for planner in shown:
        mine = rows[rows["planner"] == planner]
        ax.plot(mine["gpu_memory_bytes"] / 1e9, mine["step_time_us"] / 1e6, "o", label=planner)
        if planner != shown[0]:
            continue
        for _, row in mine.iterrows():
            label = ", ".join(f"{c}={row[c]}" for c in varied)
            ax.annotate(label, (row["gpu_memory_bytes"] / 1e9, row["step_time_us"] / 1e6),
                        fontsize=7, xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("GB the busiest GPU holds (the all-to-alls' dispatch-side buffers not counted)")
    ax.set_ylabel("step time (s)")
    ax.legend()
    ax.set_title("step time against GPU memory")
    return ax


# --- paper reproduction (tools/reproduce_paper DIR) -----------------------------------------

PAPER_BAND = (1.062, 1.114)  # the paper's end-to-end gain: 6.2% to 11.4%


def load_reproduction(directory):
    """Per run and planner: static's median max/mean load and TopoEP's speedup over the
    planner, for the skew sweep's points and the real-data runs."""
    rows = []
    sweep = read_csv(os.path.join(directory, "skew", "results.csv"))
    for _, point in sweep.groupby("point"):
        by = point.set_index("planner")
        for baseline in BASELINES:
            if baseline in by.index:
                rows.append({"source": f"synthetic {by['model'].iloc[0]}",
                             "static_max_mean": by.loc["static", "max_mean_load_median"],
                             "baseline": baseline,
                             "speedup": by.loc[baseline, "step_time_us"]
                             / by.loc["topoep", "step_time_us"]})
    runs = os.path.join(directory, "runs")
    for name in sorted(os.listdir(runs)):
        summary = read_json(os.path.join(runs, name, "summary.json"))
        planners = {p["planner"]: p for p in summary["planners"]}
        for baseline in BASELINES:
            if baseline in planners:
                rows.append({"source": f"real {name}",
                             "static_max_mean": planners["static"]["max_mean_load"]["median"],
                             "baseline": baseline,
                             "speedup": planners["topoep"]["speedup_over"][baseline]})
    return pd.DataFrame(rows)


ABLATIONS = ("topoep-flat", "topoep-balance")


def plot_gain_vs_skew(reproduction,
                      baselines=("static", "eplb", "eplb-microbatch") + ABLATIONS):
    """TopoEP's speedup against the static plan's max/mean load, one panel per baseline the
    reproduction has (topoep-flat: reproductions since 2026-12-02, topoep-balance since
    2026-12-06), with the paper's reported range shaded where it compares with a baseline
    system (not on the ablations' panels)."""
    baselines = [b for b in baselines if b in set(reproduction["baseline"])]
    figure, axes = plt.subplots(1, len(baselines), figsize=(5 * len(baselines), 4), sharey=True,
                                squeeze=False)
    axes = axes[0]
    for ax, baseline in zip(axes, baselines):
        rows = reproduction[reproduction["baseline"] == baseline]
        for source, group in rows.groupby("source"):
            group = group.sort_values("static_max_mean")
            style = "o-" if source.startswith("synthetic") else "s"
            ax.plot(group["static_max_mean"], group["speedup"], style, label=source)
        if baseline not in ABLATIONS:
            ax.axhspan(*PAPER_BAND, color="tab:green", alpha=0.15, label="paper: 6.2-11.4%")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel("static max/mean GPU load (median)")
        ax.set_title(f"TopoEP over {baseline}")
    axes[0].set_ylabel("step-time speedup (x)")
    axes[0].legend(fontsize=7)  # a panel with the paper's band
    return figure


# --- solver report --------------------------------------------------------------------------

def load_solver_report(directory):
    """Google Benchmark JSON of the solver bench and the determinism table."""
    bench = read_json(os.path.join(directory, "solver_bench.json"))
    rows = [b for b in bench["benchmarks"]
            if b.get("aggregate_name", "median") == "median" or b.get("run_type") == "iteration"]
    latency = pd.DataFrame(rows)
    determinism = read_csv(os.path.join(directory, "determinism.csv"))
    quality_path = os.path.join(directory, "quality.csv")  # reports before 2026-11-29 lack it
    quality = read_csv(quality_path) if os.path.exists(quality_path) else None
    return {"context": bench["context"], "latency": latency, "determinism": determinism,
            "quality": quality}


def plot_solver_latency(report, ax=None):
    ax = ax or plt.subplots(figsize=(7, 4))[1]
    latency = report["latency"].drop_duplicates("run_name", keep="last")
    latency.set_index("run_name")["real_time"].plot.bar(ax=ax, color="tab:blue")
    unit = latency["time_unit"].iloc[0] if len(latency) else "us"
    ax.set_ylabel(f"median solve time ({unit})")
    ax.set_title("TopoEP host solve latency per layer")
    return ax


def determinism_summary(report):
    """Per case and layer: how many distinct plan hashes the thread counts and backends
    produced (determinism: exactly one)."""
    d = report["determinism"]
    return d.groupby(["case", "layer"]).agg(runs=("plan_hash", "size"),
                                 distinct_hashes=("plan_hash", "nunique"),
                                 plan_hash=("plan_hash", "first"))


def quality_summary(report):
    """Per case and layer: static against TopoEP, with TopoEP's predicted speed-up."""
    q = report["quality"]
    if q is None:
        raise ValueError("this solver report has no quality.csv (made before 2026-11-29)")
    q = q.set_index(["case", "layer"])
    q["speedup"] = q["predicted_us_static"] / q["predicted_us_topoep"]
    return q


# --- tools/plot -----------------------------------------------------------------------------

def write_all(results_dir, out_dir):
    """Writes the key plots for whatever `results_dir` holds; returns the files written."""
    os.makedirs(out_dir, exist_ok=True)
    written = []

    def save(figure, name):
        path = os.path.join(out_dir, name)
        figure.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(figure)
        written.append(path)

    if os.path.exists(os.path.join(results_dir, "summary.json")):
        replay = load_replay(results_dir)
        save(plot_straggler_by_layer(replay).figure, "straggler_by_layer.png")
        save(plot_bytes_by_link(replay).figure, "bytes_by_link.png")
        if has_expert_activations(replay):
            save(plot_expert_activations(replay).figure, "expert_activations.png")
        if has_gpu_memory(replay):
            save(plot_gpu_memory(replay).figure, "gpu_memory.png")
        if any(p["planner"] == "topoep" for p in replay["summary"]["planners"]):
            save(plot_gain_over_baselines(replay).figure, "gain_over_baselines.png")
        if replay["rank_loads"] is not None:
            save(plot_load_heatmaps(replay), "load_heatmaps.png")
        # A pipelined run's timeline beside its outputs (simulate --pipeline-stages P
        # --timeline DIR/timeline.json); one stage's, per rank, is not drawn here.
        timeline = os.path.join(results_dir, "timeline.json")
        options = replay["summary"].get("run", {}).get("sim_options", {})
        if options.get("pipeline_stages", 1) > 1 and os.path.exists(timeline):
            schedule = load_pipeline_schedule(timeline)
            if schedule:
                save(plot_pipeline_schedule(schedule), "pipeline_schedule.png")
    if os.path.exists(os.path.join(results_dir, "results.csv")):
        results = load_sweep(results_dir)
        # The featured axes first, then any other the sweep varied. The ratio stands for the
        # link bandwidths it is made of; a trace's column is its path or generator spec.
        featured = ["slots", "ib_nvlink_ratio", "nodes", "dispatcher"]
        skipped = featured + ["ib_gb_per_s", "nvlink_gb_per_s", "trace"]
        for x in featured + [c for c in sweep_parameters(results) if c not in skipped]:
            if x in results and results[x].nunique() > 1:
                save(plot_gain_vs(results, x).figure, f"gain_vs_{x}.png")
        if has_activation_tradeoff(results):
            save(plot_step_vs_activations(results).figure, "step_vs_activations.png")
        if has_memory_tradeoff(results):
            save(plot_step_vs_memory(results).figure, "step_vs_memory.png")
    if os.path.exists(os.path.join(results_dir, "skew", "results.csv")):
        save(plot_gain_vs_skew(load_reproduction(results_dir)), "gain_vs_skew.png")
    if os.path.exists(os.path.join(results_dir, "solver_bench.json")):
        save(plot_solver_latency(load_solver_report(results_dir)).figure, "solver_latency.png")
    if not written:
        raise ValueError("no toolkit results found (summary.json, results.csv, "
                         "skew/results.csv or solver_bench.json)")
    return written


def main(argv):
    parser = argparse.ArgumentParser(description="Write the key plots of a results directory")
    parser.add_argument("results_dir")
    parser.add_argument("--out", help="PNG directory (default: RESULTS_DIR/plots)")
    args = parser.parse_args(argv)
    out_dir = args.out or os.path.join(args.results_dir, "plots")
    before = set(os.listdir(out_dir)) if os.path.isdir(out_dir) else set()
    try:
        written = write_all(args.results_dir, out_dir)
    except (OSError, ValueError, KeyError) as error:
        # A damaged results file: one line naming it, and none of this run's plots left behind
        # beside an earlier run's.
        if os.path.isdir(out_dir):
            for name in set(os.listdir(out_dir)) - before:
                os.remove(os.path.join(out_dir, name))
        what = f"a results file lacks the field {error}" if isinstance(error, KeyError) else error
        print(f"tools/plot: error: {args.results_dir}: {what}", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
