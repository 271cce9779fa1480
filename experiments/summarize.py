#!/usr/bin/env python3
"""Markdown tables of one experiment's runs, from their metrics.jsonl.

    experiments/summarize.py experiments/<experiment> runs/experiments/<experiment>

Runs are grouped by name without the `_s<seed>` suffix (set_s0 ... set_s4 -> set). Per group: the
seeds, the final evaluation (accuracy for classifiers, loss for language models: a BERT's masked-LM
loss, with its masked-token and next-sentence accuracies and next-sentence loss in columns of their
own) as mean +- sample standard deviation with every run's value, the best evaluation of each run
averaged, training FLOPs (actual and dense-equivalent), mean ms per step and wall time per run. A
`published` file in the experiment folder (`<group> <value> <source...>`) adds the published value.
A `matched` file (one dense group per line) adds Graphcore's "Matched" column: the final loss of
those groups interpolated linearly in training FLOPs at each other group's FLOPs (their FLOPs must
bracket it; no extrapolation). A run without a final evaluation is listed as unfinished, never
silently dropped. Below the table, what
the runs ran with (each run directory's run_environment.jsonl: build flags, CPU, the ISAs of the
kernels and of oneDNN, threads), one line per distinct environment with the runs that used it.
"""
import json
import math
import re
import sys
from pathlib import Path

import yaml


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


def model_name(config_path):
    try:
        config = yaml.safe_load(config_path.read_text())
    except (OSError, yaml.YAMLError) as e:
        sys.exit(f"{config_path}: cannot read the config ({e})")
    name = (config.get("model") or {}).get("name") if isinstance(config, dict) else None
    if not isinstance(name, str):
        sys.exit(f"{config_path}: no model.name; expected gpt, bert or mlp")
    return name


def read_list(path):
    """The first field of each line that is not blank or a # comment."""
    return [l.split()[0] for l in path.read_text().splitlines() if l.split() and not l.startswith("#")]


def interpolate(points, x):
    """Linear interpolation of (x, y) points at x; None outside their range."""
    points = sorted(points)
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x0 <= x <= x1 and x1 > x0:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return None


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
    matched_groups = read_list(exp_dir / "matched") if (exp_dir / "matched").exists() else []
    for group in matched_groups:
        if group not in groups:
            sys.exit(f"{exp_dir / 'matched'}: '{group}' is not a group of {exp_dir / 'runs'}")
    classifier = None
    bert = False
    results = []
    unfinished = []
    for group, runs in groups.items():
        finals, bests, flops, dense_flops, ms, walls, seeds = [], [], [], [], [], [], []
        extras = {key: [] for key in BERT_EXTRAS}
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
            # A BERT's eval row has a masked-token "accuracy" too; its headline is the masked-LM loss,
            # "mlm_loss" ("loss" is the sum with the next-sentence loss; rows written before
            # "mlm_loss" existed held the masked-LM loss as "loss").
            masked_lm = model_name(exp_dir / run["config"]) == "bert"
            bert = bert or masked_lm
            if masked_lm:
                key = "mlm_loss" if "mlm_loss" in final[-1] else "loss"
            else:
                key = "accuracy" if "accuracy" in final[-1] else "loss"
            classifier = key == "accuracy"
            scale = 100.0 if classifier else 1.0
            finals.append(final[-1][key] * scale)
            values = [e[key] * scale for e in evals if e.get(key) is not None]
            bests.append(max(values) if classifier else min(values))
            if masked_lm:
                for extra, (field, extra_scale, _) in BERT_EXTRAS.items():
                    if final[-1].get(field) is not None:
                        extras[extra].append(final[-1][field] * extra_scale)
            flops.append(train[-1]["flops_actual"])
            dense_flops.append(train[-1]["flops_dense"])
            ms.append(sum(r["ms_per_step"] for r in train) / len(train))
            seconds = out_dir / f"{run['name']}.seconds"
            if seconds.exists():
                walls.append(float(seconds.read_text()))
            seeds.append(str(run["seed"]))
        if not finals:
            continue
        results.append({"group": group, "runs": runs, "seeds": seeds, "finals": finals, "bests": bests,
                        "flops": sum(flops) / len(flops), "dense_flops": sum(dense_flops) / len(dense_flops),
                        "ms": sum(ms) / len(ms), "walls": walls, "extras": extras})
    # Graphcore's "Matched": the dense groups' final loss, linear in training FLOPs, at a group's FLOPs.
    dense_points = [(r["flops"], mean_sd(r["finals"])[0]) for r in results if r["group"] in matched_groups]
    # Accuracies in % to hundredths; losses in nats to 1e-4, where seeds differ by thousandths.
    d = 2 if classifier else 4
    rows = []
    for r in results:
        m, sd = mean_sd(r["finals"])
        b, _ = mean_sd(r["bests"])
        pub = published.get(r["group"])
        row = [r["group"], run_configs(r["runs"]), ", ".join(r["seeds"]), f"{m:.{d}f} ± {sd:.{d}f}",
               " / ".join(f"{v:.{d}f}" for v in r["finals"]), f"{b:.{d}f}"]
        if bert:
            row += [f"{mean_sd(v)[0]:.{BERT_EXTRAS[k][2]}f}" if v else "–" for k, v in r["extras"].items()]
        row.append(f"{pub[0]:.{d}f}" if pub else "–")
        if matched_groups:
            matched = None if r["group"] in matched_groups else interpolate(dense_points, r["flops"])
            row.append(f"{matched:.{d}f}" if matched is not None else "–")
        row += [si(r["flops"]), si(r["dense_flops"]), f"{r['ms']:.1f}",
                f"{sum(r['walls']) / len(r['walls']):.0f}" if r["walls"] else "–"]
        rows.append(row)
    what = "test accuracy %" if classifier else "MLM validation loss" if bert else "validation loss"
    best = "best" if classifier else "lowest"
    header = ["group", "config", "seeds", f"final {what} (mean ± sd)", "per seed", f"{best} during training (mean)"]
    if bert:
        header += list(BERT_EXTRAS)
    header.append("published")
    if matched_groups:
        header.append("Matched (dense, interpolated at these FLOPs)")
    header += ["training FLOPs", "dense-equivalent FLOPs", "ms/step", "wall s/run"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    if matched_groups:
        print(f"\nMatched: the final loss of {', '.join(matched_groups)} (mean over seeds), interpolated "
              f"linearly in training FLOPs at each other group's FLOPs; – where those FLOPs lie outside "
              f"theirs or the group is one of them. Below Matched is better than dense at equal FLOPs.")
    if published:
        print()
        for group, (value, source) in published.items():
            print(f"- published {group}: {value} — {source}")
    if unfinished:
        print(f"\nUnfinished (no final evaluation): {', '.join(unfinished)}")
    print_environments(out_dir, [run for runs in groups.values() for run in runs])


# A BERT's final-evaluation columns besides the masked-LM loss, means over seeds:
# header -> (eval row field, scale, decimals).
BERT_EXTRAS = {"masked-token accuracy %": ("accuracy", 100.0, 2), "NSP loss": ("nsp_loss", 1.0, 4),
               "NSP accuracy %": ("nsp_accuracy", 100.0, 2)}

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
