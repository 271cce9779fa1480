#!/usr/bin/env python3
"""Predicts data-parallel training of the bench GPT (configs/bench_gpt_csr90.yaml, dense and 90%
sparse CSR) on p nodes joined by a network, from measurements on one host (docs/scaling.md).

Weak scaling, the usual data-parallel case: every node trains the bench's own batch (8 sequences
of 256 tokens) per step, so the global batch is p times that and a node's compute per step stays
the measured single-process step time C. Each step adds a gradient all-reduce of S bytes, sent in
k buckets (the gradient reducer's), each a ring all-reduce:

    T_comm(p) = k * 2(p-1) * alpha + 2(p-1)/p * S / B

(alpha: latency per ring step; B: link bandwidth in bytes/s; Thakur, Rabenseifner and Gropp,
"Optimization of Collective Communication Operations in MPICH", IJHPCA 19(1), 2005). A step
takes

    no overlap:       C + T_comm
    perfect overlap:  C + max(0, T_comm - b*C)    (the all-reduce hidden behind the backward pass,
                                                   b*C, b = 2/3 by default)
    bucketed:         C + T_last + max(0, T_rest - b*C)
                      (the gradient reducer's overlap: its last bucket, which holds the tied
                       embedding's gradient, is complete only when the backward pass ends, so
                       its all-reduce T_last is never hidden; the other buckets' T_rest can be)

and the scaling efficiency is C / step (1 = linear speed-up in tokens/s). Communication dominates
from the smallest p at which T_comm(p) > b*C: from there on even perfect overlap cannot hide it.

Inputs, each from a file or the command line (the defaults are the measurements of docs/scaling.md):
  --single FILE  `sparsetrain bench train --params configs/bench_gpt_csr90.yaml --json` in one
                 process: dense_ms_per_step, sparse_ms_per_step (C) and predictions_per_step
  --mpi FILE     the same under `mpirun -np 2`: dense/sparse_allreduce_mb_per_step (S, MiB) and
                 the buckets per step (k)
  --dense-last-mib, --sparse-last-mib  the payload of the last bucket (derived in docs/scaling.md
                 from the reducer's layout rule and the model's parameter shapes)
  --allreduce FILE  `bench_allreduce --json` (optional): this host's measured shared-memory
                 all-reduce, printed beside the model's links for reference

Prints plain tables, or markdown (--markdown), or one JSON object (--json). Standard library only.
"""
import argparse
import json
import sys

# Measured on the development host, 2026-11-27 (docs/scaling.md has the commands).
DEFAULTS = {
    "dense_ms": 3367.8,  # one process, 1 thread, median step (bench train --threads 1 --steps 3 --warmup 1)
    "sparse_ms": 1486.5,
    "tokens": 2048,  # predictions per node per step: 8 sequences x 256
    "dense_mib": 88.656,  # gradient payload per step, float32 (mpirun -np 2 bench train)
    "sparse_mib": 23.856,
    "dense_buckets": 3,  # buckets of 25 MiB
    "sparse_buckets": 1,
    "dense_last_mib": 32.54,  # the bucket that ends the backward pass (holds wte), derived
    "sparse_last_mib": 23.856,  # one bucket: all of it
}
MODES = ["none", "bucketed", "perfect"]
NODES = [2, 4, 8, 16, 32, 64, 128, 256]
LINKS_GBPS = [10.0, 25.0, 100.0]


def load_json(path):
    """The JSON object in `path`; under mpirun, lines other than the result are skipped."""
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    continue
    sys.exit(f"scaling_model.py: no JSON object in {path}")


def ring_allreduce_s(p, payload_bytes, buckets, alpha_s, bandwidth_bytes_s):
    """Seconds of k ring all-reduces carrying payload_bytes in all across p nodes."""
    if p < 2:
        return 0.0
    return buckets * 2 * (p - 1) * alpha_s + 2 * (p - 1) / p * payload_bytes / bandwidth_bytes_s


def step_s(compute_s, comm_s, backward_fraction, overlap, last_s=0.0):
    """One step: `overlap` is "none", "perfect" or "bucketed" (then `last_s` of `comm_s` is the
    last bucket's all-reduce, which cannot overlap)."""
    backward = backward_fraction * compute_s
    if overlap == "perfect":
        return compute_s + max(0.0, comm_s - backward)
    if overlap == "bucketed":
        return compute_s + last_s + max(0.0, comm_s - last_s - backward)
    return compute_s + comm_s


def crossover(compute_s, payload_bytes, buckets, alpha_s, bandwidth_bytes_s, backward_fraction, limit=10**7):
    """Smallest p >= 2 whose all-reduce takes longer than the backward pass; None up to `limit`.
    T_comm grows with p, so a binary search finds it."""
    backward = backward_fraction * compute_s

    def over(p):
        return ring_allreduce_s(p, payload_bytes, buckets, alpha_s, bandwidth_bytes_s) > backward

    if not over(limit):
        return None
    lo, hi = 2, limit
    if over(lo):
        return lo
    while hi - lo > 1:  # over(lo) false, over(hi) true
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if over(mid) else (mid, hi)
    return hi


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--single", help="bench train --json of one process (step times)")
    ap.add_argument("--mpi", help="bench train --json under mpirun -np 2 (all-reduce payloads)")
    ap.add_argument("--allreduce", help="bench_allreduce --json (this host, for reference)")
    ap.add_argument("--dense-ms", type=float, help=f"dense step of one node, ms (default {DEFAULTS['dense_ms']})")
    ap.add_argument("--sparse-ms", type=float, help=f"sparse step of one node, ms (default {DEFAULTS['sparse_ms']})")
    ap.add_argument("--dense-mib", type=float, help=f"dense all-reduce payload, MiB (default {DEFAULTS['dense_mib']})")
    ap.add_argument("--sparse-mib", type=float,
                    help=f"sparse all-reduce payload, MiB (default {DEFAULTS['sparse_mib']})")
    ap.add_argument("--dense-buckets", type=int, help=f"dense buckets per step (default {DEFAULTS['dense_buckets']})")
    ap.add_argument("--sparse-buckets", type=int,
                    help=f"sparse buckets per step (default {DEFAULTS['sparse_buckets']})")
    ap.add_argument("--dense-last-mib", type=float,
                    help=f"dense payload of the last bucket, MiB (default {DEFAULTS['dense_last_mib']})")
    ap.add_argument("--sparse-last-mib", type=float,
                    help=f"sparse payload of the last bucket, MiB (default {DEFAULTS['sparse_last_mib']})")
    ap.add_argument("--tokens", type=int, help=f"tokens per node per step (default {DEFAULTS['tokens']})")
    ap.add_argument("--compute-scale", type=float, default=1.0,
                    help="divide both step times by this (a node that computes the step N times faster); default 1")
    ap.add_argument("--alpha-us", type=float, default=10.0, help="latency per ring step, us (default 10)")
    ap.add_argument("--alpha-sweep", default="5,10,20",
                    help="latencies (us) for the table of crossover points (default 5,10,20)")
    ap.add_argument("--node-speedups", default="1,4,16",
                    help="node speeds, as multiples of the measured step's speed, for the second table of "
                         "crossover points (default 1,4,16)")
    ap.add_argument("--links", default=",".join(f"{g:g}" for g in LINKS_GBPS), help="link speeds, Gb/s")
    ap.add_argument("--link-efficiency", type=float, default=1.0,
                    help="fraction of the line rate the all-reduce gets (default 1: the line rate)")
    ap.add_argument("--nodes", default=",".join(map(str, NODES)), help="node counts")
    ap.add_argument("--backward-fraction", type=float, default=2.0 / 3.0,
                    help="share of the step that is the backward pass (default 2/3)")
    ap.add_argument("--markdown", action="store_true", help="markdown tables")
    ap.add_argument("--json", action="store_true", help="one JSON object")
    return ap.parse_args()


def gather_inputs(a):
    """The model's inputs and where each came from."""
    v = dict(DEFAULTS)
    source = {k: "default (docs/scaling.md)" for k in v}
    if a.single:
        j = load_json(a.single)
        v["dense_ms"], v["sparse_ms"] = j["dense_ms_per_step"], j["sparse_ms_per_step"]
        v["tokens"] = int(j["tokens_per_step"])
        for k in ("dense_ms", "sparse_ms", "tokens"):
            source[k] = a.single
        if j.get("ranks", 1) != 1:
            print(f"scaling_model.py: warning: {a.single} is a {j['ranks']}-rank run; the model wants one node's "
                  "step over the whole batch", file=sys.stderr)
    if a.mpi:
        j = load_json(a.mpi)
        if "dense_allreduce_mb_per_step" not in j:
            sys.exit(f"scaling_model.py: {a.mpi} has no all-reduce figures (not an mpirun -np 2 run?)")
        v["dense_mib"], v["sparse_mib"] = j["dense_allreduce_mb_per_step"], j["sparse_allreduce_mb_per_step"]
        v["dense_buckets"], v["sparse_buckets"] = j["dense_allreduce"]["buckets"], j["sparse_allreduce"]["buckets"]
        for k in ("dense_mib", "sparse_mib", "dense_buckets", "sparse_buckets"):
            source[k] = a.mpi
        for case in ("dense", "sparse"):
            if v[f"{case}_buckets"] == 1:  # one bucket: it is also the last
                v[f"{case}_last_mib"] = v[f"{case}_mib"]
                source[f"{case}_last_mib"] = a.mpi
    for k in DEFAULTS:
        given = getattr(a, k, None)
        if given is not None:
            v[k] = given
            source[k] = "command line"
    return v, source


def main():
    a = parse_args()
    v, source = gather_inputs(a)
    nodes = [int(x) for x in a.nodes.split(",")]
    links = [float(x) for x in a.links.split(",")]
    alphas = [float(x) for x in a.alpha_sweep.split(",")]
    speedups = [float(x) for x in a.node_speedups.split(",")]
    if min(nodes) < 1 or a.compute_scale <= 0 or not 0 < a.backward_fraction < 1 or a.link_efficiency <= 0:
        sys.exit("scaling_model.py: nodes >= 1, compute scale > 0, 0 < backward fraction < 1, link efficiency > 0")
    b = a.backward_fraction
    alpha = a.alpha_us * 1e-6
    for case in ("dense", "sparse"):
        if not 0 < v[f"{case}_last_mib"] <= v[f"{case}_mib"]:
            sys.exit(f"scaling_model.py: the {case} last bucket must hold between 0 and all of the payload")
    cases = {
        case: (v[f"{case}_ms"] / 1e3 / a.compute_scale, v[f"{case}_mib"] * 2**20, v[f"{case}_buckets"],
               v[f"{case}_last_mib"] * 2**20)
        for case in ("dense", "sparse")
    }

    def bw(gbps):
        return gbps * 1e9 / 8 * a.link_efficiency

    result = {
        "model": "weak scaling, ring all-reduce per bucket: T = k*2(p-1)*alpha + 2(p-1)/p * S/B",
        "inputs": v,
        "sources": source,
        "alpha_us": a.alpha_us,
        "backward_fraction": b,
        "compute_scale": a.compute_scale,
        "link_efficiency": a.link_efficiency,
        "payload_ratio": v["sparse_mib"] / v["dense_mib"],
        "rows": [],
        "crossover": [],
    }
    for case, (c, s, k, last) in cases.items():
        for g in links:
            row = {"case": case, "gbps": g, "comm_ms": [], "last_bucket_ms": []}
            for mode in MODES:
                row[f"eff_{mode}"] = []
                row[f"tokens_per_s_{mode}"] = []
            for p in nodes:
                t = ring_allreduce_s(p, s, k, alpha, bw(g))
                t_last = ring_allreduce_s(p, last, 1, alpha, bw(g))
                row["comm_ms"].append(t * 1e3)
                row["last_bucket_ms"].append(t_last * 1e3)
                for mode in MODES:
                    step = step_s(c, t, b, mode, t_last)
                    row[f"eff_{mode}"].append(c / step)
                    row[f"tokens_per_s_{mode}"].append(p * v["tokens"] / step)
            row["comm_limit_ms"] = 2 * s / bw(g) * 1e3  # bandwidth term as p grows
            result["rows"].append(row)
    for case, (c, s, k, _) in cases.items():
        for g in links:
            result["crossover"].append({"case": case, "gbps": g, "backward_ms": b * c * 1e3,
                                        "nodes": {f"{al:g}": crossover(c, s, k, al * 1e-6, bw(g), b) for al in alphas},
                                        "nodes_by_speedup": {f"{x:g}": crossover(c / x, s, k, alpha, bw(g), b)
                                                             for x in speedups}})
    if a.allreduce:
        j = load_json(a.allreduce)
        sizes = j["sizes"]
        result["host_allreduce"] = {"communicator": j.get("communicator"), "cpu": j.get("cpu"), "date": j.get("date"),
                                    "smallest_bytes": sizes[0]["bytes"], "smallest_us": sizes[0]["median_us"],
                                    "largest_bytes": sizes[-1]["bytes"], "largest_busbw_gbs": sizes[-1]["busbw_gbs"],
                                    "peak_busbw_gbs": max(x["busbw_gbs"] for x in sizes)}
    if a.json:
        print(json.dumps(result, indent=1))
        return
    report(result, nodes, links, alphas, speedups, a.markdown)


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def report(r, nodes, links, alphas, speedups, markdown):
    v = r["inputs"]

    def table(title, header, rows):
        if markdown:
            print(f"\n{title}\n")
            print("| " + " | ".join(header) + " |")
            print("|" + "|".join("---" for _ in header) + "|")
            for row in rows:
                print("| " + " | ".join(row) + " |")
        else:
            print(f"\n{title}")
            widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
            for row in [header] + rows:
                print("  ".join(str(x).rjust(w) for x, w in zip(row, widths)))

    name = {"dense": "dense", "sparse": "CSR 90%"}
    print(f"{'**Inputs**' if markdown else 'inputs'}: one node's step (weak scaling, {v['tokens']} tokens per node "
          f"per step): dense {v['dense_ms']:.0f} ms, CSR 90% {v['sparse_ms']:.0f} ms"
          + (f" (divided by {r['compute_scale']:g})" if r["compute_scale"] != 1 else "")
          + f"; all-reduce per step: dense {v['dense_mib']:.1f} MiB in {plural(v['dense_buckets'], 'bucket')} (last "
          f"{v['dense_last_mib']:.1f}), CSR 90% {v['sparse_mib']:.1f} MiB in {plural(v['sparse_buckets'], 'bucket')} "
          f"(last {v['sparse_last_mib']:.1f}; {r['payload_ratio']:.3f}x dense); "
          f"alpha {r['alpha_us']:g} us per ring step; backward {r['backward_fraction']:.3f} of the step; links at "
          f"{r['link_efficiency']:g} x line rate")
    if "host_allreduce" in r:
        h = r["host_allreduce"]
        print(f"this host ({h['communicator']}, shared memory): {h['smallest_bytes']} B all-reduce "
              f"{h['smallest_us']:.2f} us; {h['largest_bytes'] / 2**20:.0f} MiB at {h['largest_busbw_gbs']:.2f} GB/s "
              f"bus bandwidth (peak {h['peak_busbw_gbs']:.2f} GB/s, {h['peak_busbw_gbs'] * 8:.0f} Gb/s)")
    header = ["case", "link"] + [f"p={p}" for p in nodes]

    def lead(row):
        return [name[row["case"]], f"{row['gbps']:g} Gb/s"]

    table("All-reduce time per step, ms (T_comm)", header,
          [lead(row) + [f"{t:.1f}" for t in row["comm_ms"]] for row in r["rows"]])
    b = r["backward_fraction"]
    table(f"Step time of one node below which communication outlasts the backward pass, ms (T_comm / {b:.3g}); "
          f"measured: dense {v['dense_ms'] / r['compute_scale']:.0f}, CSR 90% "
          f"{v['sparse_ms'] / r['compute_scale']:.0f}", header,
          [lead(row) + [f"{t / b:.0f}" for t in row["comm_ms"]] for row in r["rows"]])
    titles = {
        "none": "Scaling efficiency, no overlap: C / (C + T_comm)",
        "bucketed": "Scaling efficiency, the reducer's overlap (last bucket exposed): C / (C + T_last + max(0, T_comm - "
        "T_last - backward))",
        "perfect": "Scaling efficiency, perfect overlap with backward: C / (C + max(0, T_comm - backward))",
    }
    for mode in MODES:
        table(titles[mode], header, [lead(row) + [f"{e:.3f}" for e in row[f"eff_{mode}"]] for row in r["rows"]])
    dense_rows = {row["gbps"]: row for row in r["rows"] if row["case"] == "dense"}
    speed_rows = []
    for mode in MODES:
        for row in r["rows"]:
            if row["case"] != "sparse":
                continue
            d = dense_rows[row["gbps"]]
            speed_rows.append([mode, f"{row['gbps']:g} Gb/s"] + [
                f"{s / t:.2f}x" for s, t in zip(row[f"tokens_per_s_{mode}"], d[f"tokens_per_s_{mode}"])])
    table("CSR 90% tokens/s over dense tokens/s on p nodes", ["overlap", "link"] + [f"p={p}" for p in nodes],
          speed_rows)
    cross_rows = []
    for x in r["crossover"]:
        cross_rows.append([name[x["case"]], f"{x['gbps']:g} Gb/s", f"{x['backward_ms']:.0f}"]
                          + [str(x["nodes"][f"{al:g}"] or "> 10^7") for al in alphas])
    table("Nodes from which the all-reduce outlasts the backward pass (communication dominates)",
          ["case", "link", "backward ms"] + [f"alpha {al:g} us" for al in alphas], cross_rows)
    speed_rows = []
    for x in r["crossover"]:
        speed_rows.append([name[x["case"]], f"{x['gbps']:g} Gb/s"]
                          + [str(x["nodes_by_speedup"][f"{sp:g}"] or "> 10^7") for sp in speedups])
    table(f"The same for nodes that compute the step N times faster (alpha {r['alpha_us']:g} us)",
          ["case", "link"] + [f"N = {sp:g}" for sp in speedups], speed_rows)

if __name__ == "__main__":
    main()
