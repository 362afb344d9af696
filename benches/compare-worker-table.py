#!/usr/bin/env python3
"""The markdown tables of benches/compare-worker.sh, from the harnesses' JSON lines.

Usage: python3 benches/compare-worker-table.py RESULTS.jsonl

Each figure is the median over the rounds of one (implementation, mode). The first table
lists the raw figures; the second sets ours against the peers and checks the issue's targets:

- instant jobs at concurrency >= 10: at least 95% of the Redis ceiling, 1e6 / our Redis CPU
  microseconds per job in that mode (the rate at which one Redis core could run our worker's
  scripts if the client cost nothing), and never below either peer in jobs/s;
- every mode: client CPU per job at most half the official port's and a quarter of Node's;
- instant jobs at concurrency 1 (latency-bound): at least 1.3x the official port and 1.5x
  Node in jobs/s;
- 10 ms jobs at concurrency 100: at least 90% of the theoretical 10,000 jobs/s;
- concurrency 500: the worker process's peak RSS at most a third of Node's.
"""

from compare_rows import load, median, present, print_raw_table, table_script, verdict

OURS = "bullmq-rs"
OFFICIAL = "bullmq-official"
NODE = "bullmq-node"
IMPLS = [OURS, OFFICIAL, NODE]
MODES = [
    f"instant-c{c}-{keep}" for c in (1, 10, 100, 500) for keep in ("keep", "remove")
] + ["sleep10ms-c100"]
# The targets.
CEILING_SHARE = 0.95
CPU_VS = {OFFICIAL: 0.5, NODE: 0.25}
LATENCY_VS = {OFFICIAL: 1.3, NODE: 1.5}
SLEEP_RATE = 0.9 * 10_000
RSS_VS_NODE = 1 / 3


def short(impl):
    return impl.removeprefix("bullmq-")


def checks_for(mode, runs):
    """The target checks of `mode`, as text, and the cells of the ratio table."""
    ours = runs[(OURS, mode)]
    concurrency = ours[0]["concurrency"]
    rate = median(ours, "jobs_per_sec")
    cpu = median(ours, "client_cpu_us_per_job")
    ceiling = 1e6 / median(ours, "redis_cpu_us_per_job")
    share = rate / ceiling
    instant = mode.startswith("instant")
    cells, checks = [], []
    for peer in (NODE, OFFICIAL):
        rows = runs.get((peer, mode))
        if not rows:
            cells += ["–", "–"]
            continue
        ratio = rate / median(rows, "jobs_per_sec")
        cpu_ratio = cpu / median(rows, "client_cpu_us_per_job")
        cells += [f"{ratio:.2f}x", f"{cpu_ratio:.2f}"]
        if instant and concurrency == 1:
            target = LATENCY_VS[peer]
            checks.append(f"≥{target}x {short(peer)}: {verdict(ratio >= target)}")
        elif instant:
            checks.append(f"≥ {short(peer)}: {verdict(ratio >= 1)}")
        target = CPU_VS[peer]
        checks.append(f"CPU ≤{target:g}x {short(peer)}: {verdict(cpu_ratio <= target)}")
    if instant and concurrency >= 10:
        checks.append(f"≥{CEILING_SHARE:.0%} ceiling: {verdict(share >= CEILING_SHARE)}")
    if not instant:
        checks.append(f"≥{SLEEP_RATE:,.0f} jobs/s: {verdict(rate >= SLEEP_RATE)}")
    node = runs.get((NODE, mode))
    if concurrency == 500 and node:
        rss = median(ours, "peak_rss_kb") / median(node, "peak_rss_kb")
        checks.append(f"RSS ≤⅓ node: {verdict(rss <= RSS_VS_NODE)}")
    return cells, ceiling, share, checks


def main(path):
    runs = load(path)
    modes = present(runs, MODES, IMPLS)
    print_raw_table(
        runs, modes, IMPLS, ["peak RSS MiB"], lambda rows: [f"{median(rows, 'peak_rss_kb') / 1024:.1f}"]
    )
    print(
        "| mode | ours/node jobs/s | ours/node CPU | ours/official jobs/s | ours/official CPU "
        "| Redis ceiling jobs/s | ours % of ceiling | targets |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for mode in modes:
        if (OURS, mode) not in runs:
            continue
        cells, ceiling, share, checks = checks_for(mode, runs)
        print(
            f"| {mode} | {' | '.join(cells)} | {ceiling:,.0f} | {share:.0%} "
            f"| {'; '.join(checks) or '–'} |"
        )


if __name__ == "__main__":
    table_script(main, __doc__)
