#!/usr/bin/env python3
"""Joins the measurements of bench/peers/run.sh (the `sparsetrain bench train --json` objects and
torch_gpt.py's JSON lines) into one table on stdout and one JSON file. Each row's figure is the
median step over the run's processes; the ratio column divides its tokens/s by PyTorch bf16
autocast's."""
import argparse
import datetime
import json
import os
import platform
import statistics


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
    p.add_argument("--torch", required=True, help="torch_gpt.py's JSON lines")
    a = p.parse_args()

    sparsetrain_runs = []
    for label, path in a.sparsetrain:
        with open(path) as f:
            sparsetrain_runs.append({"sparse_label": label, **json.load(f)})
    with open(a.torch) as f:
        torch_runs = [json.loads(line) for line in f if line.strip()]

    suffix = "" if a.precision_sparsetrain == "fp32" else f" {a.precision_sparsetrain}"
    # row label -> [(ms per step, tokens per step)], one per process. A row's figure is the median
    # step and the tokens/s it gives, so that the two columns agree when rounds are even in number.
    samples = {}

    def add(label, ms, tokens):
        samples.setdefault(label, []).append((ms, tokens))

    # Every bench train command measures the dense model in a process of its own; with two
    # configs the dense row is the median over both commands' dense processes.
    for r in sparsetrain_runs:
        add(f"sparsetrain dense{suffix}", r["dense_ms_per_step"], r["predictions_per_step"])
    for r in sparsetrain_runs:
        add(f"sparsetrain {r['sparse_label']}{suffix}", r["sparse_ms_per_step"], r["predictions_per_step"])
    names = {"fp32": "PyTorch fp32", "bf16": "PyTorch bf16 autocast"}
    for precision in ("fp32", "bf16"):
        for r in torch_runs:
            if r["precision"] == precision:
                add(names[precision], r["step_ms_median"], r["tokens_per_step"])

    rows = []
    for label, values in samples.items():
        ms = statistics.median(m for m, _ in values)
        rows.append({
            "what": label,
            "tokens_per_s": values[0][1] * 1e3 / ms,
            "ms_per_step": ms,
            "ms_per_step_each": [m for m, _ in values],
        })
    reference = next((r["tokens_per_s"] for r in rows if r["what"] == names["bf16"]), None)
    for r in rows:
        r["ratio_to_pytorch_bf16"] = r["tokens_per_s"] / reference if reference else None

    torch0 = torch_runs[0] if torch_runs else {}
    first = sparsetrain_runs[0] if sparsetrain_runs else {}
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
        "rows": rows,
        "sparsetrain": sparsetrain_runs,
        "torch": torch_runs,
    }
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")

    blas = torch0.get("blas") or {}
    loaded = (blas.get("blas_library") or {}).get("loaded") or ["?"]
    print(f"\n{a.threads} threads; sparsetrain {first.get('isa')} kernels, oneDNN {first.get('onednn_isa')}; "
          f"torch {torch0.get('torch_version')}: ATen {blas.get('cpu_capability')}, BLAS {loaded[0]}, "
          f"bf16 matmul {(torch0.get('bf16') or {}).get('matmul_implementation')}")
    width = max(len(r["what"]) for r in rows)
    print(f"{'what':<{width}}  {'ms/step':>8}  {'tokens/s':>9}  vs PyTorch bf16")
    for r in rows:
        ratio = f"{r['ratio_to_pytorch_bf16']:.2f}x" if r["ratio_to_pytorch_bf16"] else "-"
        print(f"{r['what']:<{width}}  {r['ms_per_step']:>8.1f}  {r['tokens_per_s']:>9.0f}  {ratio:>15}")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
