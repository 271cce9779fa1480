#!/usr/bin/env python3
"""Joins the measurements of bench/peers/run.sh (the `sparsetrain bench train --json` objects and
torch_gpt.py's JSON lines) into one table on stdout and one JSON file. Each row's figure is the
median step over the run's processes (data-parallel runs: over the run's process groups); the
ratio columns divide its tokens/s by PyTorch fp32's and bf16 autocast's (with a note when this
CPU's PyTorch has no native bf16 matmul, so that autocast is not what its users run), and with
data-parallel rows (run.sh --ddp N) two more columns divide it by PyTorch DDP fp32's and bf16
autocast's, and a summary sets each sparse sparsetrain data-parallel row against them (target:
>= 3x). With --target KEY=SPEEDUP a summary judges rows against the speedups asked for and says
by how much each missed one falls short; --sparsetrain-fp32 adds the sparse cases in fp32 beside
a bf16 run (run.sh --with-fp32)."""
import argparse
import datetime
import json
import os
import platform
import statistics
import sys

# sparsetrain 90% sparse on N processes x 1 thread against PyTorch DDP on the same.
DDP_TARGET = 3.0

# --target KEY=SPEEDUP: the row of sparsetrain's dense case or of a sparse case (its label's first
# word, lower-cased: "CSR 90%" -> csr) against PyTorch bf16 autocast, or every sparse case in the
# run's precision against the same case in fp32 (run.sh --with-fp32).
BF16_OVER_FP32 = "bf16-over-fp32"


def parse_targets(items, sparse_keys):
    """{key: speedup} from KEY=SPEEDUP items; exits naming the item when one does not parse."""
    keys = ["dense", *sparse_keys, BF16_OVER_FP32]
    targets = {}
    for item in items:
        key, eq, value = item.partition("=")
        try:
            speedup = float(value)
        except ValueError:
            speedup = 0.0
        if not eq or key not in keys or not 0 < speedup < float("inf"):
            sys.exit(f"combine.py: --target {item}: expected KEY=SPEEDUP with KEY one of {', '.join(keys)} "
                     "and SPEEDUP a number > 0")
        if key in targets:
            sys.exit(f"combine.py: --target {item}: {key} has two targets")
        targets[key] = speedup
    return targets


def case_key(label):
    return label.split()[0].lower()


def load_bench_json(path, ranks=None):
    """The one `bench train --json` object in `path`. Under mpirun (ranks given) only rank 0 may
    print it: one object per rank means N independent single-process runs, not a data-parallel
    one."""
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    # Anything mpirun itself wrote to stdout around the result is skipped.
    objects = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                objects.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    if len(objects) != 1:
        where = f" under mpirun -np {ranks}" if ranks else ""
        sys.exit(f"combine.py: {path}: {len(objects)} bench train results{where}, expected one")
    return objects[0]


def plural(n, word):
    return f"{n} {word}{'' if n == 1 else 's'}"


def cpu_facts():
    facts = {"cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "cpu family", "model") and key not in facts:
                    facts[key] = value.strip()
                if key == "flags" and "avx512" not in facts:
                    flags = value.split()
                    facts["avx512"] = "avx512f" in flags
                    facts["avx512_bf16"] = "avx512_bf16" in flags
                    facts["amx_bf16"] = "amx_bf16" in flags
    except OSError:
        pass
    return facts


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--precision-sparsetrain", default="fp32")
    p.add_argument("--sparsetrain-version", default="")
    p.add_argument("--sparsetrain", nargs=2, action="append", default=[], metavar=("LABEL", "FILE"),
                   help="a sparse case's row label and its bench train JSON file (once per round)")
    p.add_argument("--sparsetrain-ddp", nargs=2, action="append", default=[], metavar=("LABEL", "FILE"),
                   help="the same from `mpirun -np DDP ... bench train --json` (once per round)")
    p.add_argument("--ddp", type=int, default=0, help="processes of the data-parallel cases (0: none)")
    p.add_argument("--ddp-threads", type=int, default=1, help="threads of each data-parallel process")
    p.add_argument("--sparsetrain-fp32", nargs=2, action="append", default=[], metavar=("LABEL", "FILE"),
                   help="the same sparse case's bench train JSON in fp32, beside a bf16 run (once per round)")
    p.add_argument("--target", action="append", default=[], metavar="KEY=SPEEDUP",
                   help=f"judge a row: dense or a sparse case (csr, bcsr16) against PyTorch bf16 autocast, or "
                        f"{BF16_OVER_FP32}: every sparse case against itself in fp32")
    p.add_argument("--torch", required=True, help="torch_gpt.py's JSON lines (with and without --ddp)")
    a = p.parse_args()
    targets = parse_targets(a.target, sorted({case_key(label) for label, _ in a.sparsetrain}))
    if BF16_OVER_FP32 in targets and (a.precision_sparsetrain == "fp32" or not a.sparsetrain_fp32):
        sys.exit(f"combine.py: --target {BF16_OVER_FP32} needs a run in another precision than fp32 and its "
                 "sparse cases in fp32 too (run.sh --precision-sparsetrain bf16 --with-fp32)")

    sparsetrain_runs = []
    for label, path in a.sparsetrain:
        sparsetrain_runs.append({"sparse_label": label, **load_bench_json(path)})
    sparsetrain_fp32_runs = []
    for label, path in a.sparsetrain_fp32:
        sparsetrain_fp32_runs.append({"sparse_label": label, **load_bench_json(path)})
    sparsetrain_ddp_runs = []
    for label, path in a.sparsetrain_ddp:
        r = load_bench_json(path, a.ddp)
        if "ranks" in r and r["ranks"] != a.ddp:
            sys.exit(f"combine.py: {path}: bench train reports {r['ranks']} ranks, run with {a.ddp}")
        sparsetrain_ddp_runs.append({"sparse_label": label, **r})
    with open(a.torch) as f:
        all_torch_runs = [json.loads(line) for line in f if line.strip()]
    # torch_gpt.py --ddp adds "ranks".
    torch_runs = [r for r in all_torch_runs if "ranks" not in r]
    torch_ddp_runs = [r for r in all_torch_runs if "ranks" in r]

    suffix = "" if a.precision_sparsetrain == "fp32" else f" {a.precision_sparsetrain}"
    # row label -> [(ms per step, tokens per step)], one per process. A row's figure is the median
    # step and the tokens/s it gives, so that the two columns agree when rounds are even in number.
    samples = {}

    def add(label, ms, tokens):
        samples.setdefault(label, []).append((ms, tokens))

    # Every bench train command measures the dense model in a process of its own; with two
    # configs the dense row is the median over both commands' dense processes.
    for r in sparsetrain_runs:
        add(f"sparsetrain dense{suffix}", r["dense_ms_per_step"], r["tokens_per_step"])
    for r in sparsetrain_runs:
        add(f"sparsetrain {r['sparse_label']}{suffix}", r["sparse_ms_per_step"], r["tokens_per_step"])
    # The same cases in fp32 (--with-fp32), beside a bf16 run.
    for r in sparsetrain_fp32_runs:
        add("sparsetrain dense", r["dense_ms_per_step"], r["tokens_per_step"])
    for r in sparsetrain_fp32_runs:
        add(f"sparsetrain {r['sparse_label']}", r["sparse_ms_per_step"], r["tokens_per_step"])
    names = {"fp32": "PyTorch fp32", "bf16": "PyTorch bf16 autocast"}
    for precision in ("fp32", "bf16"):
        for r in torch_runs:
            if r["precision"] == precision:
                add(names[precision], r["step_ms_median"], r["tokens_per_step"])

    # Data parallel: N processes x T threads, one step of the group per row figure.
    groups = f"{plural(a.ddp, 'rank')} x {plural(a.ddp_threads, 'thread')}"
    for r in sparsetrain_ddp_runs:
        add(f"sparsetrain dense{suffix} ({groups})", r["dense_ms_per_step"], r["tokens_per_step"])
    sparse_ddp_labels = []
    for r in sparsetrain_ddp_runs:
        label = f"sparsetrain {r['sparse_label']}{suffix} ({groups})"
        if label not in sparse_ddp_labels:
            sparse_ddp_labels.append(label)
        add(label, r["sparse_ms_per_step"], r["tokens_per_step"])
    ddp_names = {}
    for precision in ("fp32", "bf16"):
        for r in torch_ddp_runs:
            if r["precision"] == precision:
                what = "fp32" if precision == "fp32" else "bf16 autocast"
                ddp_names[precision] = (f"PyTorch DDP {r['ddp_backend']} {what} "
                                        f"({r['ranks']} x {r['threads_per_rank']})")
                add(ddp_names[precision], r["step_ms_median"], r["tokens_per_step"])

    rows = []
    for label, values in samples.items():
        ms = statistics.median(m for m, _ in values)
        rows.append({
            "what": label,
            "tokens_per_s": values[0][1] * 1e3 / ms,
            "ms_per_step": ms,
            "ms_per_step_each": [m for m, _ in values],
        })
    def rate_of(label):
        return next((r["tokens_per_s"] for r in rows if r["what"] == label), None)

    reference = rate_of(names["bf16"])
    fp32_reference = rate_of(names["fp32"])
    ddp_reference = {precision: rate_of(label) for precision, label in ddp_names.items()}
    for r in rows:
        r["ratio_to_pytorch_bf16"] = r["tokens_per_s"] / reference if reference else None
        r["ratio_to_pytorch_fp32"] = r["tokens_per_s"] / fp32_reference if fp32_reference else None
        for precision, rate in ddp_reference.items():
            r[f"ratio_to_pytorch_ddp_{precision}"] = r["tokens_per_s"] / rate

    # What the data-parallel comparison is for: sparse sparsetrain against PyTorch DDP, the same
    # processes and threads.
    sparse_vs_ddp = []
    for label in sparse_ddp_labels:
        for precision, peer in ddp_names.items():
            ratio = rate_of(label) / ddp_reference[precision]
            sparse_vs_ddp.append({"sparsetrain": label, "pytorch": peer, "ratio": ratio, "target": DDP_TARGET,
                                  "met": ratio >= DDP_TARGET})
    # The targets: a row against PyTorch bf16 autocast, or a sparse case in the run's precision
    # against the same case in fp32.
    judged = []

    def judge(what, against, ratio, target):
        judged.append({"what": what, "against": against, "ratio": ratio, "target": target,
                       "met": ratio >= target, "short_by": target / ratio})

    sparse_labels = list(dict.fromkeys(r["sparse_label"] for r in sparsetrain_runs))
    for key, target in targets.items():
        if key == BF16_OVER_FP32:
            for label in sparse_labels:
                row = f"sparsetrain {label}{suffix}"
                judge(row, f"sparsetrain {label}", rate_of(row) / rate_of(f"sparsetrain {label}"), target)
            continue
        if not reference:
            sys.exit(f"combine.py: --target {key}: no PyTorch bf16 autocast run to compare with")
        for row in [f"sparsetrain dense{suffix}"] if key == "dense" else \
                [f"sparsetrain {label}{suffix}" for label in sparse_labels if case_key(label) == key]:
            judge(row, names["bf16"], rate_of(row) / reference, target)

    # The rows compare throughput only if both sides train on the same global batch.
    ddp_tokens = {r["tokens_per_step"] for r in torch_ddp_runs} | \
        {r["tokens_per_step"] for r in sparsetrain_ddp_runs}
    if len(ddp_tokens) > 1:
        print(f"combine.py: warning: the data-parallel runs differ in tokens per step ({sorted(ddp_tokens)}): "
              "sparsetrain's and PyTorch's global batches are not the same", file=sys.stderr)

    torch0 = torch_runs[0] if torch_runs else (torch_ddp_runs[0] if torch_ddp_runs else {})
    first = sparsetrain_runs[0] if sparsetrain_runs else {}
    # Without bf16 dot-product instructions (AVX512-BF16, AMX) PyTorch's oneDNN runs autocast's
    # matmuls through conversions or reference loops, which on an AVX2 CPU took 29x its fp32
    # time (docs/benchmarks.md): there a user runs fp32, and that is the peer to read.
    torch_bf16 = torch0.get("bf16") or {}
    torch_bf16_native = torch_bf16.get("native")
    result = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host": {**cpu_facts(), "kernel": platform.release()},
        "threads": a.threads,
        "precision_sparsetrain": a.precision_sparsetrain,
        "sparsetrain_version": a.sparsetrain_version,
        "sparsetrain_isa": first.get("isa"),
        "sparsetrain_onednn_isa": first.get("onednn_isa"),
        "torch_version": torch0.get("torch_version"),
        "torch_blas": torch0.get("blas"),
        "torch_bf16": torch0.get("bf16"),
        "torch_bf16_native": torch_bf16_native,
        "rows": rows,
        "targets": judged,
        "sparsetrain": sparsetrain_runs,
        "sparsetrain_fp32": sparsetrain_fp32_runs,
        "torch": torch_runs,
    }
    if a.ddp:
        result["ddp"] = {
            "ranks": a.ddp,
            "threads_per_rank": a.ddp_threads,
            "sparsetrain": "mpirun -np N --oversubscribe --bind-to none sparsetrain bench train --threads 1 --json",
            "pytorch": "torch_gpt.py --ddp N --threads 1",
            "pytorch_ddp_bucket_cap_mb": sorted({r["ddp_bucket_cap_mb"] for r in torch_ddp_runs}),
            "sparse_vs_pytorch_ddp": sparse_vs_ddp,
        }
        result["sparsetrain_ddp"] = sparsetrain_ddp_runs
        result["torch_ddp"] = torch_ddp_runs
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")

    blas = torch0.get("blas") or {}
    loaded = (blas.get("blas_library") or {}).get("loaded") or ["?"]
    print(f"\n{a.threads} threads; sparsetrain {first.get('isa')} kernels, oneDNN {first.get('onednn_isa')}; "
          f"torch {torch0.get('torch_version')}: ATen {blas.get('cpu_capability')}, BLAS {loaded[0]}, "
          f"bf16 matmul {torch_bf16.get('matmul_implementation')}")
    if a.ddp:
        print(f"data parallel: {groups} each; sparsetrain under mpirun, PyTorch DDP over gloo "
              f"(bucket_cap_mb {', '.join(f'{v:g}' for v in result['ddp']['pytorch_ddp_bucket_cap_mb']) or '-'})"
              + ("" if sparsetrain_ddp_runs else "; no sparsetrain data-parallel run (see the messages above)"))
    width = max(len(r["what"]) for r in rows)
    columns = [("vs PyTorch fp32", "ratio_to_pytorch_fp32"), ("vs PyTorch bf16", "ratio_to_pytorch_bf16")]
    columns += [(f"vs DDP {precision}", f"ratio_to_pytorch_ddp_{precision}") for precision in ddp_names]
    print(f"{'what':<{width}}  {'ms/step':>8}  {'tokens/s':>9}" + "".join(f"  {h:>15}" for h, _ in columns))
    for r in rows:
        ratios = "".join(f"  {(f'{r[k]:.2f}x' if r.get(k) else '-'):>15}" for _, k in columns)
        print(f"{r['what']:<{width}}  {r['ms_per_step']:>8.1f}  {r['tokens_per_s']:>9.0f}{ratios}")
    if judged:
        print("\ntargets:")
        for c in judged:
            verdict = "met" if c["met"] else f"missed, short by {c['short_by']:.3f}x"
            print(f"  {c['what']} vs {c['against']}: {c['ratio']:.2f}x, target >= {c['target']:g}x: {verdict}")
    if torch_bf16_native is False and reference:
        speed = f"; its bf16 autocast ran at {reference / fp32_reference:.2f}x of its fp32 speed" if fp32_reference else ""
        print(f"\nnote: PyTorch has no native bf16 matmul on this CPU (oneDNN ran "
              f"{torch_bf16.get('matmul_implementation')}){speed}. A user of this CPU runs PyTorch in fp32: read "
              "the 'vs PyTorch fp32' column"
              + ("; the targets above are against bf16 autocast." if judged else "."))
    if sparse_vs_ddp:
        print(f"\nsparsetrain sparse vs PyTorch DDP (target >= {DDP_TARGET:g}x):")
        for c in sparse_vs_ddp:
            verdict = "met" if c["met"] else f"short by {DDP_TARGET / c['ratio']:.2f}x"
            print(f"  {c['sparsetrain']} vs {c['pytorch']}: {c['ratio']:.2f}x ({verdict})")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
