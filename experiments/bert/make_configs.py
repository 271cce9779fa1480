#!/usr/bin/env python3
"""Writes the BERT-on-Brown experiment configs and `runs` lists (experiments/bert_brown_pareto/,
experiments/bert_brown_blocks/ and experiments/bert_brown_seeds/): Graphcore's sparse BERT
pre-training comparisons (Dietrich, Gressmann et al. 2021) at a scale two CPU cores train in about
an hour per experiment.

    experiments/bert/make_configs.py

BERT (Hugging Face BertForPreTraining), 4 layers, heads of 64, intermediate 4x hidden, masked LM
(15%, at most 20 predictions per sequence) and next-sentence prediction on Brown, WordPiece,
sequences of 128, batch 16. Sparsity covers the six fully connected weights of each encoder layer
(query, key, value, attention output, intermediate, output), as Graphcore's; embeddings, pooler and
heads stay dense. The tied MLM decoder over the 30,522-token vocabulary costs the same FLOPs at
every sparsity (20 masked tokens per sequence x hidden x vocabulary): at the small widths here it
is a large fixed share of every step, the largest share of a 90% sparse model's, which narrows
what sparsity can save at equal FLOPs.

- bert_brown_pareto: every run gets the same training-FLOP budget, BUDGET_STEPS steps of the
  width-256 dense model (about an hour with `run.sh --jobs 2`): dense at widths 128, 192, 256 and
  90% static and dynamic at 256, 384, 512. Each config's FLOPs per step (sparsetrain's own
  accounting: actual, i.e. sparse, FLOPs) are measured by training it one step, and its max_steps,
  learning-rate and pattern-update schedules are scaled to fit the budget.
- bert_brown_blocks: Graphcore's Table 1 in miniature: the dynamic method at 90%, width
  BLOCK_WIDTH, block size 1 (CSR), 4, 8, 16 (BCSR), for the steps the Pareto gives it (b1 is the
  Pareto's config), and dense models of widths 128, 192, 256 for as many steps, whose FLOPs
  bracket the sparse ones': their final loss interpolated linearly in FLOPs is the "Matched"
  column (the `matched` file, experiments/summarize.py).
- bert_brown_seeds: the Pareto's static and dynamic width-256 runs again with seeds 0-2, beside the
  dynamic method with FEW_UPDATES pattern updates (the count that did best for the GPTs) instead
  of Graphcore's 160: whether dynamic beats static at this budget, and with which update count.

The dynamic method is Graphcore's: magnitude prune, random regrow, prune ratio 0.5 decaying along
their cosine, 160 pattern updates over the run. The configs are committed; rerun this only to
change the design.
"""
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "experiments"))
from flops_per_step import flops_per_step  # noqa: E402

# Graphcore's pattern updates in phase I of pre-training.
DYNAMIC_UPDATES = 160
# The update count that did best for the GPTs at a similar budget (docs/results.md, section 3).
FEW_UPDATES = 10
# Seeds of the static-against-dynamic repeat.
SEEDS = (0, 1, 2)
# The Pareto's budget, in steps of the width-256 dense model.
BUDGET_STEPS = 500
# The width of the block-size runs: between the dense widths 192 and 256 in FLOPs per step.
BLOCK_WIDTH = 384

MODEL = """model:
  name: bert
  hidden_size: {width}
  num_hidden_layers: 4
  num_attention_heads: {heads}
  intermediate_size: {intermediate}
  max_position_embeddings: 128
  hidden_act: gelu
  hidden_dropout_prob: 0.0
  attention_probs_dropout_prob: 0.0

train_input:
  data: brown
  tokenizer: wordpiece
  batch_size: 16
  max_sequence_length: 128
  max_predictions_per_seq: 20
  masked_lm_prob: 0.15
  validation_fraction: 0.05

eval_input:
  data: brown
  tokenizer: wordpiece
  batch_size: 32
  max_sequence_length: 128
  validation_fraction: 0.05
  eval_batches: 20

optimizer:
  optimizer_type: adamw
  learning_rate:
    scheduler: cosine
    initial_learning_rate: {lr}
    warmup_steps: {warmup}
    total_iters: {decay}
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

ENCODER_LINEARS = '["bert.encoder.layer.*.attention.self.*.weight", "bert.encoder.layer.*.dense.weight"]'


def sparsity(kind, steps, fmt, updates):
    if kind == "dense":
        return ""
    text = (f"\nsparsity:\n  algorithm: {'set' if kind == 'dynamic' else kind}\n  sparsity: 0.9\n  format: {fmt}\n"
            f"  param_filter: {ENCODER_LINEARS}\n")
    if kind == "dynamic":
        text += (f"  drop_fraction: {{type: graphcore_cosine, init: 0.5, total_steps: {steps}}}\n"
                 f"  update:\n    freq: {max(steps // updates, 1)}\n    stop: {steps}\n")
    return text


def describe(kind, width, fmt, updates):
    what = {"dense": "dense", "static": "static 90% sparse (random mask, fixed)",
            "dynamic": f"dynamic 90% sparse (Graphcore: magnitude prune, random regrow, prune ratio 0.5 "
                       f"cosine-decayed, {updates} pattern updates)"}[kind]
    where = "" if kind == "dense" else f" on the encoder's fully connected weights, {fmt}"
    text = (f"BERT on Brown (WordPiece, masked LM + next sentence), 4 layers, hidden {width}, sequences of 128, "
            f"batch 16, AdamW: {what}{where}.")
    return "".join(f"# {line}\n" for line in textwrap.wrap(text, 98))


def config_text(kind, width, steps, fmt="csr", lr=1e-3, updates=DYNAMIC_UPDATES):
    warmup = max(steps // 20, 1)
    body = MODEL.format(width=width, heads=width // 64, intermediate=4 * width, lr=lr, lr_end=lr / 10,
                        warmup=warmup, decay=max(steps - warmup, 1))
    body += sparsity(kind, steps, fmt, updates)
    run = RUN.format(steps=steps, log=max(steps // 20, 1), eval=max(steps // 4, 1))
    return describe(kind, width, fmt, updates) + body + run


def write(folder, name, text):
    (folder / name).write_text(text)


def run_line(name, config, kind, steps, seed=0, widths=(18, 18)):
    # --quick trains a dynamic run up to its first pattern update at Graphcore's count, so CI
    # exercises one.
    quick = max(3, steps // DYNAMIC_UPDATES) if kind == "dynamic" else 3
    return f"{name:<{widths[0]}} {config:<{widths[1]}} {seed}    1       {quick}"


def main():
    dense_w256 = flops_per_step(config_text("dense", 256, 100))
    budget = BUDGET_STEPS * dense_w256

    # 1. Pareto at equal training FLOPs. The sparse runs take about twice as long as the dense ones:
    # listed first, they leave the short runs to fill the last slots of `run.sh --jobs 2`.
    pareto = ROOT / "experiments/bert_brown_pareto"
    pareto.mkdir(exist_ok=True)
    families = [("static", [256, 384, 512]), ("dynamic", [256, 384, 512]), ("dense", [128, 192, 256])]
    lines = [f"# Equal training FLOPs: {budget:.4g} each ({BUDGET_STEPS} steps of the width-256 dense BERT).",
             "# run              config             seed threads quick_steps"]
    steps_of = {}
    for kind, widths in families:
        for width in widths:
            per_step = dense_w256 if (kind, width) == ("dense", 256) else flops_per_step(config_text(kind, width, 100))
            steps = steps_of[kind, width] = int(budget // per_step)
            name = f"{kind}_w{width}"
            write(pareto, f"{name}.yaml", config_text(kind, width, steps))
            lines.append(run_line(name, f"{name}.yaml", kind, steps))
    write(pareto, "runs", "\n".join(lines) + "\n")

    # 2. Block sizes: the dynamic method at width BLOCK_WIDTH for the steps the Pareto gives it (so b1
    # is the Pareto's dynamic config), and dense BERTs of three widths for as many steps, whose FLOPs
    # bracket the sparse runs' for the Matched column.
    blocks = ROOT / "experiments/bert_brown_blocks"
    blocks.mkdir(exist_ok=True)
    steps = steps_of["dynamic", BLOCK_WIDTH]
    lines = [f"# Dynamic sparsity at 90%, width {BLOCK_WIDTH}: block size 1 (CSR), 4, 8, 16 (BCSR), and dense",
             f"# widths 128, 192, 256 for comparison (the `matched` file), all {steps} steps.",
             "# run              config             seed threads quick_steps"]
    for fmt, tag in (("csr", "b1"), ("bcsr4", "b4"), ("bcsr8", "b8"), ("bcsr16", "b16")):
        write(blocks, f"{tag}.yaml", config_text("dynamic", BLOCK_WIDTH, steps, fmt))
        lines.append(run_line(tag, f"{tag}.yaml", "dynamic", steps))
    dense = [f"dense_w{width}" for width in (128, 192, 256)]
    for name, width in zip(dense, (128, 192, 256)):
        write(blocks, f"{name}.yaml", config_text("dense", width, steps))
        lines.append(run_line(name, f"{name}.yaml", "dense", steps))
    write(blocks, "runs", "\n".join(lines) + "\n")
    write(blocks, "matched", "# Dense groups whose final loss, linear in training FLOPs, gives the Matched column.\n"
          + "\n".join(dense) + "\n")

    # 3. Seeds: the Pareto's static and dynamic width-256 configs, and the dynamic method with
    # FEW_UPDATES pattern updates instead of Graphcore's count, at the same budget, for each seed.
    seeds = ROOT / "experiments/bert_brown_seeds"
    seeds.mkdir(exist_ok=True)
    steps = steps_of["dynamic", 256]
    few = f"dynamic_u{FEW_UPDATES}_w256"
    write(seeds, f"{few}.yaml", config_text("dynamic", 256, steps, updates=FEW_UPDATES))
    lines = [f"# Static against dynamic at 90%, width 256, the Pareto's budget ({steps} steps): Graphcore's",
             f"# {DYNAMIC_UPDATES} pattern updates and {FEW_UPDATES}, seeds {SEEDS[0]}-{SEEDS[-1]}.",
             "# run                   config                                 seed threads quick_steps"]
    runs = [("static_w256", "../bert_brown_pareto/static_w256.yaml", "static"),
            ("dynamic_w256", "../bert_brown_pareto/dynamic_w256.yaml", "dynamic"),
            (few, f"{few}.yaml", "dynamic")]
    for seed in SEEDS:
        for name, config, kind in runs:
            lines.append(run_line(f"{name}_s{seed}", config, kind, steps, seed, widths=(22, 38)))
    write(seeds, "runs", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
