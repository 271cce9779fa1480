#!/usr/bin/env python3
"""Markdown tables of one experiment's runs, from their metrics.jsonl.

    experiments/summarize.py experiments/<experiment> runs/experiments/<experiment>

Runs are grouped by name without the `_s<seed>` suffix (set_s0 ... set_s4 -> set). Per group: the
seeds, the final evaluation (accuracy for classifiers, loss and perplexity for language models) as
mean +- sample standard deviation with every run's value, the best evaluation of each run averaged,
training FLOPs (actual and dense-equivalent), mean ms per step and wall time per run. A `published`
file in the experiment folder (`<group> <value> <source...>`) adds the published value. A run
without a final evaluation is listed as unfinished, never silently dropped. Below the table, what
the runs ran with (each run directory's run_environment.jsonl: build flags, CPU, the ISAs of the
kernels and of oneDNN, threads), one line per distinct environment with the runs that used it.
"""
import json
import math
import re
import sys
from pathlib import Path


def read_runs(exp_dir):
    runs = []
    for n, line in enumerate((exp_dir / "runs").read_text().splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) < 5:
            sys.exit(f"{exp_dir / 'runs'}:{n}: expected <run> <config> <seed> <threads> <quick_steps> [options]")
        runs.append({"name": fields[0], "config": fields[1], "seed": int(fields[2]), "threads": int(fields[3])})
    return runs


def read_metrics(path):
    train, evals = [], []
    lines = path.read_text().splitlines()
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):  # a run killed mid-write
                break
            sys.exit(f"{path}:{n}: not a JSON object")
        (evals if row.get("split") == "eval" else train).append(row)
    return train, evals


def mean_sd(values):
    m = sum(values) / len(values)
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return m, sd


def si(x):
    for unit, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.3g}"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    exp_dir, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    published = {}
    if (exp_dir / "published").exists():
        for line in (exp_dir / "published").read_text().splitlines():
            f = line.split(maxsplit=2)
            if f and not f[0].startswith("#"):
                published[f[0]] = (float(f[1]), f[2] if len(f) > 2 else "")

    groups = {}
    for run in read_runs(exp_dir):
        group = re.sub(r"_s\d+$", "", run["name"])
        groups.setdefault(group, []).append(run)

    print(f"# {exp_dir.name}\n")
    print(f"Runs in `{out_dir}`; each a `sparsetrain train_and_eval --params {exp_dir}/<config> "
          f"--seed <seed> --threads <threads>`.\n")
    classifier = None
    rows = []
    unfinished = []
    for group, runs in groups.items():
        finals, bests, flops, dense_flops, ms, walls, seeds = [], [], [], [], [], [], []
        for run in runs:
            model_dir = out_dir / run["name"]
            metrics = model_dir / "metrics.jsonl"
            if not metrics.exists():
                unfinished.append(run["name"])
                continue
            train, evals = read_metrics(metrics)
            last_step = train[-1]["step"] if train else None
            final = [e for e in evals if e["step"] == last_step]
            if not final:
                unfinished.append(run["name"])
                continue
            key = "accuracy" if "accuracy" in final[-1] else "loss"
            classifier = key == "accuracy"
            scale = 100.0 if classifier else 1.0
            finals.append(final[-1][key] * scale)
            values = [e[key] * scale for e in evals if e.get(key) is not None]
            bests.append(max(values) if classifier else min(values))
            flops.append(train[-1]["flops_actual"])
            dense_flops.append(train[-1]["flops_dense"])
            ms.append(sum(r["ms_per_step"] for r in train) / len(train))
            seconds = out_dir / f"{run['name']}.seconds"
            if seconds.exists():
                walls.append(float(seconds.read_text()))
            seeds.append(str(run["seed"]))
        if not finals:
            continue
        m, sd = mean_sd(finals)
        b, _ = mean_sd(bests)
        pub = published.get(group)
        # Accuracies in % to hundredths; losses in nats to 1e-4, where seeds differ by thousandths.
        d = 2 if classifier else 4
        rows.append([
            group, run_configs(runs), ", ".join(seeds), f"{m:.{d}f} ± {sd:.{d}f}",
            " / ".join(f"{v:.{d}f}" for v in finals), f"{b:.{d}f}", f"{pub[0]:.{d}f}" if pub else "–",
            si(sum(flops) / len(flops)), si(sum(dense_flops) / len(dense_flops)), f"{sum(ms) / len(ms):.1f}",
            f"{sum(walls) / len(walls):.0f}" if walls else "–",
        ])
    what = "test accuracy %" if classifier else "validation loss"
    best = "best" if classifier else "lowest"
    header = ["group", "config", "seeds", f"final {what} (mean ± sd)", "per seed", f"{best} during training (mean)",
              "published", "training FLOPs", "dense-equivalent FLOPs", "ms/step", "wall s/run"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if published:
        print()
        for group, (value, source) in published.items():
            print(f"- published {group}: {value} — {source}")
    if unfinished:
        print(f"\nUnfinished (no final evaluation): {', '.join(unfinished)}")
    print_environments(out_dir, [run for runs in groups.values() for run in runs])


# The fields of run_environment.jsonl that decide a run's bits besides its config and seed
# (docs/reliability.md#determinism-contract).
ENVIRONMENT_FIELDS = ("sparsetrain", "compiler", "build_flags", "cpu", "kernel_isa", "onednn", "onednn_isa",
                      "threads", "portable")


def text(value):
    return value if isinstance(value, str) else json.dumps(value)


def print_environments(out_dir, runs):
    used = {}
    for run in runs:
        path = out_dir / run["name"] / "run_environment.jsonl"
        if not path.parent.exists():
            continue  # not started
        if not path.exists():
            used.setdefault("not recorded", []).append(run["name"])
            continue
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by a crash
            described = ", ".join(f"{k}: {text(record.get(k))}" for k in ENVIRONMENT_FIELDS)
            names = used.setdefault(described, [])
            if run["name"] not in names:
                names.append(run["name"])
    if not used:
        return
    print("\nEnvironments (run_environment.jsonl; a run resumed on another one lists both):\n")
    for described, names in used.items():
        print(f"- {described} — {', '.join(names)}")


def run_configs(runs):
    return ", ".join(sorted({r["config"] for r in runs}))


if __name__ == "__main__":
    main()
