#!/usr/bin/env python3
"""The markdown table of benches/compare-pickup.sh, from the harnesses' JSON lines.

Usage: python3 benches/compare-pickup-table.py RESULTS.jsonl

One row per mode and latency quantile (p50, p99, p99.9): for ours, Node.js BullMQ and the
official Rust port, the median over the rounds in ms with its range (min–max), then the
ratios of the medians ours ÷ Node and ours ÷ official (below 1: ours picks jobs up sooner).
"""

from compare_rows import load, median, present, table_script

OURS = "bullmq-rs"
PEERS = ["bullmq-node", "bullmq-official"]
IMPLS = [OURS, *PEERS]
MODES = [f"rate{r}-c10" for r in (100, 1000, 10000)]
QUANTILES = [("p50", "p50_ms"), ("p99", "p99_ms"), ("p99.9", "p999_ms")]


def cell(rows, field):
    """A median (min–max) ms cell, or a dash when the implementation did not run."""
    if not rows:
        return "–"
    values = [r[field] for r in rows]
    return f"{median(rows, field):.2f} ({min(values):.2f}–{max(values):.2f})"


def ratio(ours, peer, field):
    if not ours or not peer or not median(peer, field):
        return "–"
    return f"{median(ours, field) / median(peer, field):.2f}x"


def main(path):
    runs = load(path)
    modes = present(runs, MODES, IMPLS)
    print("| mode | quantile | ours ms | Node ms | official ms | ours ÷ Node | ours ÷ official |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for mode in modes:
        ours = runs.get((OURS, mode))
        peers = [runs.get((peer, mode)) for peer in PEERS]
        for label, field in QUANTILES:
            cells = [cell(rows, field) for rows in [ours, *peers]]
            cells += [ratio(ours, rows, field) for rows in peers]
            print(f"| {mode} | {label} | {' | '.join(cells)} |")


if __name__ == "__main__":
    table_script(main, __doc__)
