#!/usr/bin/env python3
"""The markdown table of benches/compare-add.sh, from the harnesses' JSON lines.

Usage: python3 benches/compare-add-table.py RESULTS.jsonl

Each figure is the median over the rounds of one (implementation, mode). The ratios are
ours over each peer in jobs/s; the Redis ceiling of a mode is 1e6 / our Redis CPU
microseconds per job in that mode: the rate at which one Redis core could run our adds if
the client cost nothing.
"""

from compare_rows import load, median, present, print_raw_table, table_script, verdict

OURS = "bullmq-rs"
IMPLS = [OURS, "bullmq-official", "bullmq-node"]
MODES = ["sequential", "concurrent8", "bulk1000"]
METRICS = ["jobs_per_sec", "client_cpu_us_per_job", "redis_cpu_us_per_job"]
# The targets: ours/peer in jobs/s per mode, and our share of the Redis ceiling.
RATIO_TARGETS = {
    "sequential": {"bullmq-node": 1.3, "bullmq-official": 1.3},
    "bulk1000": {"bullmq-official": 1.25},
}
CEILING_TARGETS = {"bulk1000": 0.9}


def main(path):
    runs = load(path)
    modes = present(runs, MODES, IMPLS)
    print_raw_table(runs, modes, IMPLS)
    print(
        "| mode | ours/node jobs/s | ours/official jobs/s | Redis ceiling jobs/s "
        "| ours % of ceiling | targets |"
    )
    print("|---|---:|---:|---:|---:|---|")
    for mode in modes:
        ours = runs.get((OURS, mode))
        if not ours:
            continue
        rate = median(ours, "jobs_per_sec")
        ceiling = 1e6 / median(ours, "redis_cpu_us_per_job")
        cells, checks = [], []
        for peer in ["bullmq-node", "bullmq-official"]:
            rows = runs.get((peer, mode))
            if not rows:
                cells.append("–")
                continue
            ratio = rate / median(rows, "jobs_per_sec")
            cells.append(f"{ratio:.2f}x")
            target = RATIO_TARGETS.get(mode, {}).get(peer)
            if target:
                short = peer.removeprefix("bullmq-")
                checks.append(f"≥{target}x {short}: {verdict(ratio >= target)}")
        share = rate / ceiling
        target = CEILING_TARGETS.get(mode)
        if target:
            checks.append(f"≥{target:.0%} of ceiling: {verdict(share >= target)}")
        print(
            f"| {mode} | {cells[0]} | {cells[1]} | {ceiling:,.0f} | {share:.0%} "
            f"| {'; '.join(checks) or '–'} |"
        )


if __name__ == "__main__":
    table_script(main, __doc__)
