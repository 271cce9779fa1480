#!/usr/bin/env python3
"""Writes the GPT-on-Brown experiment configs and `runs` lists (experiments/gpt_brown_*/ and
experiments/extended/gpt_brown_*/).

    experiments/gpt_brown/make_configs.py [--budget-steps N]

Every run of a Pareto experiment gets the same training-FLOP budget: the FLOPs of a number of
steps of the widest dense model, 500 for `gpt_brown_pareto` (under an hour with `run.sh --jobs 2`)
and 1500 for `extended/gpt_brown_pareto_1500` (about 2.5 h, so outside the suite). Each config's
FLOPs per step (sparsetrain's own accounting: actual, i.e. sparse, FLOPs) are measured by
training it one step, and its `max_steps`, learning-rate schedule and mask-update schedule are
scaled to fit the budget. The block-size runs (four, at `--budget-steps`, default 1500) and the
N:M runs use the larger budget. The seeds and update-count experiments reuse the smaller Pareto's
configs and budget. The configs are committed; rerun this only to change the design.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
from flops_per_step import flops_per_step  # noqa: E402

# Mask updates of the dynamic method in the Pareto (and its seeds): fewer, larger updates did better
# than 40 or 160 at this budget (experiment gpt_brown_updates). The block-size and N:M runs use 40.
PARETO_DYNAMIC_UPDATES = 10
# The two Pareto budgets, in steps of the width-256 dense model.
PARETO_BUDGET_STEPS = (500, 1500)

MODEL = """model:
  name: gpt
  n_positions: 128
  n_layer: 4
  n_head: 4
  n_embd: {width}

train_input:
  data: brown
  tokenizer: byte
  batch_size: 16
  validation_fraction: 0.05

eval_input:
  data: brown
  tokenizer: byte
  batch_size: 16
  validation_fraction: 0.05
  eval_batches: 40

optimizer:
  optimizer_type: adamw
  learning_rate:
    scheduler: cosine
    initial_learning_rate: {lr}
    warmup_steps: {warmup}
    total_iters: {steps}
    end_learning_rate: {lr_end}
  weight_decay: 0.01
  max_gradient_norm: 1.0
"""

RUN = """
runconfig:
  max_steps: {steps}
  log_steps: {log}
  eval_frequency: {eval}
  checkpoint_steps: {eval}
"""


def sparsity(kind, level, steps, fmt="csr", dynamic_updates=40):
    if kind == "dense":
        return ""
    text = f"\nsparsity:\n  algorithm: {'set' if kind == 'dynamic' else kind}\n  sparsity: {level}\n  format: {fmt}\n"
    if kind == "dynamic":
        # Graphcore: magnitude prune, random regrow, prune ratio 0.5 decaying by a cosine to 0.
        text += (f"  drop_fraction: {{type: graphcore_cosine, init: 0.5, total_steps: {steps}}}\n"
                 f"  update:\n    freq: {max(steps // dynamic_updates, 1)}\n    stop: {steps}\n")
    if kind == "rigl":
        stop = steps * 3 // 4
        text += (f"  drop_fraction: {{type: cosine, init: 0.3, half_period: {stop}}}\n"
                 f"  update:\n    freq: {max(steps // 40, 1)}\n    stop: {stop}\n")
    return text


def describe(kind, level, width, fmt, dynamic_updates):
    what = {"dense": "dense", "static": f"static {level:.0%} sparse (random mask, fixed)",
            "dynamic": f"dynamic {level:.0%} sparse (magnitude prune, random regrow, prune ratio 0.5 cosine-decayed, "
                       f"{dynamic_updates} mask updates)",
            "rigl": f"RigL {level:.0%} sparse (drop 0.3 cosine, gradient regrow, stop at 75%)"}[kind]
    return f"# GPT on Brown (bytes), 4 layers, width {width}, context 128, batch 16, AdamW: {what}, {fmt}.\n"


def config_text(kind, level, width, steps, fmt="csr", lr=None, data="", dynamic_updates=40):
    lr = lr or (3e-3 if width <= 256 else 2e-3)
    body = MODEL.format(width=width, lr=lr, lr_end=lr / 10, warmup=max(steps // 20, 1), steps=steps)
    body = body.replace("  validation_fraction: 0.05\n\neval_input", f"  validation_fraction: 0.05\n{data}\neval_input")
    body += sparsity(kind, level, steps, fmt, dynamic_updates)
    run = RUN.format(steps=steps, log=max(steps // 20, 1), eval=max(steps // 6, 1))
    return describe(kind, level, width, fmt, dynamic_updates) + body + run


def write(folder, name, text):
    (folder / name).write_text(text)


def pareto(experiment, budget_steps, dense_w256, per_step):
    """Writes one Pareto experiment; returns the steps of each (kind, width).

    per_step caches each config's measured FLOPs per step across budgets."""
    folder = ROOT / "experiments" / experiment
    folder.mkdir(parents=True, exist_ok=True)
    # The sparse runs take about twice as long as the dense ones: listed first, they leave the short
    # runs to fill the last slots of `run.sh --jobs 2`.
    families = [(k, 0.9, [256, 384, 512]) for k in ("static", "dynamic", "rigl")] + [("dense", 0.0, [128, 192, 256])]
    budget = budget_steps * dense_w256
    lines = [f"# Equal training FLOPs: {budget:.4g} each ({budget_steps} steps of the width-256 dense model).",
             "# run              config                 seed threads quick_steps"]
    steps_of = {}
    for kind, level, widths in families:
        for width in widths:
            if (kind, width) not in per_step:
                per_step[kind, width] = flops_per_step(config_text(kind, level, width, 100))
            steps = steps_of[kind, width] = int(budget // per_step[kind, width])
            name = f"{kind}_w{width}"
            text = config_text(kind, level, width, steps, dynamic_updates=PARETO_DYNAMIC_UPDATES)
            write(folder, f"{name}.yaml", text)
            lines.append(f"{name:<18} {name + '.yaml':<22} 0    1       5")
    write(folder, "runs", "\n".join(lines) + "\n")
    return steps_of


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget-steps", type=int, default=1500)
    args = parser.parse_args()

    # 1. Pareto at equal training FLOPs, at two budgets.
    dense_w256 = flops_per_step(config_text("dense", 0.0, 256, 100))
    per_step = {}
    steps_of = pareto("gpt_brown_pareto", PARETO_BUDGET_STEPS[0], dense_w256, per_step)
    pareto(f"extended/gpt_brown_pareto_{PARETO_BUDGET_STEPS[1]}", PARETO_BUDGET_STEPS[1], dense_w256, per_step)

    # 1b. Three seeds of static against dynamic at the two widths where sparse models beat the best
    # dense one: whether their one-seed differences above are a real effect. The configs are the
    # Pareto's; a separate experiment keeps each under an hour.
    seeds = ROOT / "experiments/gpt_brown_pareto_seeds"
    seeds.mkdir(exist_ok=True)
    lines = ["# Static vs dynamic at 90%, the Pareto's configs and budget, seeds 0-2.",
             "# run               config                                 seed threads quick_steps"]
    for width in (256, 384):
        for seed in range(3):  # pairs of one seed next to each other: a partial set still compares
            for kind in ("static", "dynamic"):
                name = f"{kind}_w{width}_s{seed}"
                lines.append(f"{name:<19} {'../gpt_brown_pareto/' + kind + f'_w{width}.yaml':<38} {seed}    1       5")
    write(seeds, "runs", "\n".join(lines) + "\n")

    # 1c. How often the dynamic method updates its mask, at the Pareto's budget: 10 (the Pareto's
    # setting), 40 and 160 (Graphcore's BERT pre-training) updates over the run, seed 0.
    updates = ROOT / "experiments/gpt_brown_updates"
    updates.mkdir(exist_ok=True)
    lines = ["# The dynamic method at 90% with 10, 40 or 160 mask updates, the Pareto's budget and widths 256, 384.",
             "# run             config                                 seed threads quick_steps"]
    for width in (256, 384):
        for count in (10, 40, 160):
            name = f"u{count}_w{width}"
            if count == PARETO_DYNAMIC_UPDATES:
                config = f"../gpt_brown_pareto/dynamic_w{width}.yaml"
            else:
                config = f"{name}.yaml"
                write(updates, config, config_text("dynamic", 0.9, width, steps_of["dynamic", width],
                                                   dynamic_updates=count))
            lines.append(f"{name:<17} {config:<38} 0    1       5")
    write(updates, "runs", "\n".join(lines) + "\n")

    # 2. Block sizes for the dynamic method at 90%, width 384, the steps that --budget-steps steps of
    # the width-256 dense model's FLOPs buy with CSR.
    blocks = ROOT / "experiments/gpt_brown_blocks"
    blocks.mkdir(exist_ok=True)
    steps = int(args.budget_steps * dense_w256 // per_step["dynamic", 384])
    lines = ["# Dynamic sparsity at 90%, width 384: block size 1 (CSR), 4, 8, 16 (BCSR), the same steps.",
             "# run        config          seed threads quick_steps"]
    for fmt, tag in (("csr", "b1"), ("bcsr4", "b4"), ("bcsr8", "b8"), ("bcsr16", "b16")):
        write(blocks, f"{tag}.yaml", config_text("dynamic", 0.9, 384, steps, fmt))
        lines.append(f"{tag:<12} {tag + '.yaml':<15} 0    1       5")
    write(blocks, "runs", "\n".join(lines) + "\n")

    # 3. Unstructured vs 2:4 at 50%, width 256, dynamic (2:4 regrows within each group of four).
    nm = ROOT / "experiments/gpt_brown_nm"
    nm.mkdir(exist_ok=True)
    lines = ["# 50% sparsity, width 256, dynamic: unstructured (CSR) vs 2:4, and dense, the same steps.",
             "# run            config              seed threads quick_steps"]
    for name, kind, fmt in (("dense", "dense", "csr"), ("unstructured50", "dynamic", "csr"), ("nm2_4", "dynamic", '"2:4"')):
        write(nm, f"{name}.yaml", config_text(kind, 0.5, 256, args.budget_steps, fmt))
        lines.append(f"{name:<16} {name + '.yaml':<19} 0    2       5")
    write(nm, "runs", "\n".join(lines) + "\n")

    # 4. SPDF: pre-train on Brown without its news genre, 75% static sparse or dense; then fine-tune
    # dense on news alone, starting from each pre-trained model's weights (@run: its newest
    # checkpoint); and news from scratch for scale.
    spdf = ROOT / "experiments/gpt_brown_spdf"
    spdf.mkdir(exist_ok=True)
    pre, tune = 2000, 400
    without_news = "  exclude_categories: [news]\n"
    news = "  categories: [news]\n"
    write(spdf, "pretrain_dense.yaml", config_text("dense", 0.0, 256, pre, data=without_news))
    write(spdf, "pretrain_sparse75.yaml", config_text("static", 0.75, 256, pre, data=without_news))
    write(spdf, "finetune_news.yaml", config_text("dense", 0.0, 256, tune, lr=1e-3, data=news))
    lines = ["# SPDF (Thangarasa et al. 2023) in miniature: pre-train dense or 75% sparse without news, fine-tune",
             "# dense on news; news from scratch for scale. Fine-tunes wait for their pre-training (@run).",
             "# run               config                  seed threads quick_steps options",
             "pretrain_dense      pretrain_dense.yaml     0    1       5",
             "pretrain_sparse75   pretrain_sparse75.yaml  0    1       5",
             "finetune_dense      finetune_news.yaml      0    1       5          --checkpoint_path @pretrain_dense --load_checkpoint_states model",
             "finetune_sparse75   finetune_news.yaml      0    1       5          --checkpoint_path @pretrain_sparse75 --load_checkpoint_states model",
             "scratch_news        finetune_news.yaml      0    1       5"]
    write(spdf, "runs", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
