#!/usr/bin/env python3
"""Turns `sparsetrain bench linear --json` output into the markdown tables of docs/benchmarks.md.

usage: bench_table.py [--metric speedup|speedup_vs_dense_best] run1.jsonl [run2.jsonl ...]

One row per layer and token count, one column per format and sparsity. With several runs (one
file per process) each cell is the median over the runs, so one disturbed process cannot move
it; the dense columns give the median dense step time and GFLOP/s."""
import argparse
import collections
import json
import statistics
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--metric", default="speedup", choices=["speedup", "speedup_vs_dense_best"])
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    columns = []
    cells = collections.OrderedDict()
    for path in args.runs:
        with open(path) as f:
            for line_number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"bench_table: {path}:{line_number}: not JSON ({e})")
                key = (f"{r['in']}→{r['out']}", r["tokens"])
                column = f"{r['format']} {round(r['sparsity'] * 100)}%"
                if column not in columns:
                    columns.append(column)
                cells.setdefault(key, {}).setdefault(column, []).append(r)
    print("| layer | tokens | dense ms | dense GF/s | " + " | ".join(columns) + " |")
    print("|---|---|---|---|" + "---|" * len(columns))
    for key, by_column in cells.items():
        everything = [r for rs in by_column.values() for r in rs]
        out = [key[0], str(key[1]),
               f"{statistics.median(r['dense_ms'] for r in everything):.2f}",
               f"{statistics.median(r['dense_gflops'] for r in everything):.0f}"]
        for c in columns:
            rs = by_column.get(c)
            out.append(f"{statistics.median(r[args.metric] for r in rs):.2f}×" if rs else "")
        print("| " + " | ".join(out) + " |")


if __name__ == "__main__":
    main()
