#!/usr/bin/env python3
"""The markdown tables of benches/compare-fleet.sh, from the harnesses' JSON lines.

Usage: python3 benches/compare-fleet-table.py RESULTS.jsonl

Each figure is the median over the rounds of one (implementation, mode), with its range
[min–max]; "ours ÷ Node per round" pairs the n-th run of each (the script runs them in the
same round). The issue's goals:

- busy: jobs/s at the Redis ceiling from N = 1 on, that is at least 95% of 1e6 / our Redis
  CPU microseconds per job in that mode (the rate one Redis core could sustain if the client
  cost nothing);
- idle: at most 100 KB of RSS per added idle worker, (RSS_N - RSS_0) / N.
"""

from compare_rows import load, median, table_script, verdict

OURS = "bullmq-rs"
NODE = "bullmq-node"
CEILING_SHARE = 0.95
KB_PER_WORKER = 100


def spread(rows, metric, fmt):
    """`median [min–max]` of `metric` over `rows`, each number written with `fmt`."""
    values = [r[metric] for r in rows]
    return f"{fmt(median(rows, metric))} [{fmt(min(values))}–{fmt(max(values))}]"


def per_round(mine, theirs, metric):
    """Ours ÷ Node for each round both ran, in order."""
    ratios = []
    for a, b in zip(mine, theirs):
        ratios.append(f"{a[metric] / b[metric]:.2f}" if b[metric] else "–")
    return " ".join(ratios) or "–"


def modes_of(runs, phase):
    """The modes of `phase`, ordered by sharing (own first) then number of workers."""
    modes = {m for (_, m) in runs if m.startswith(phase + "-")}

    def key(mode):
        _, workers, sharing = mode.split("-")
        return (sharing != "own", int(workers.removeprefix("w")))

    return sorted(modes, key=key)


def both(mine, theirs, metric):
    """`ours / Node` medians of `metric`, one decimal."""
    node = f"{median(theirs, metric):.1f}" if theirs else "–"
    return f"{median(mine, metric):.1f} / {node}"


def marginal(runs, idle):
    """Per sharing, what each worker past the first ones costs: the growth of the median RSS
    added between the two largest N, over the workers added (one-time costs cancel out)."""
    lines = []
    for sharing in dict.fromkeys(m.split("-")[2] for m in idle):
        modes = [m for m in idle if m.endswith("-" + sharing)]
        if len(modes) < 2:
            continue
        low, high = modes[-2], modes[-1]
        cells = []
        for impl in (OURS, NODE):
            a, b = runs.get((impl, low)), runs.get((impl, high))
            if not a or not b:
                continue
            na, nb = a[0]["workers"], b[0]["workers"]
            added = lambda rows: median(rows, "rss_after_kb") - median(rows, "rss_before_kb")
            cells.append(f"{impl} {(added(b) - added(a)) / (nb - na):,.1f} KB")
        if cells:
            lines.append(f"Marginal RSS per idle worker, {sharing}, N = {na} → {nb}: "
                         + ", ".join(cells) + ".")
    return lines


def row(cells):
    return "| " + " | ".join(cells) + " |"


def main(path):
    runs = load(path)
    rounds = max(len(rows) for rows in runs.values())
    jobs = sorted({r["jobs"] for rows in runs.values() for r in rows if "jobs" in r})
    print(
        f"Medians of {rounds} round(s) [min–max]; jobs per busy run: "
        f"{', '.join(map(str, jobs)) or '–'}; concurrency 500 per worker.\n"
    )
    kilo = lambda v: f"{v:,.0f}"
    mib = lambda v: f"{v / 1024:,.1f}"
    one = lambda v: f"{v:,.1f}"

    busy = modes_of(runs, "busy")
    if busy:
        print("Throughput, instant jobs (goal: at the Redis ceiling, ≥95%, from N = 1)\n")
        print(row(["workers", "backend", "bullmq-rs jobs/s", "Node jobs/s",
                   "ours ÷ Node per round", "client CPU µs/job ours / Node",
                   "Redis CPU µs/job ours / Node", "Redis ceiling (ours)", "ours % of ceiling",
                   "goal"]))
        print("|---:|---|---:|---:|---|---:|---:|---:|---:|---|")
        for mode in busy:
            mine, theirs = runs.get((OURS, mode), []), runs.get((NODE, mode), [])
            if not mine:
                continue
            rate = median(mine, "jobs_per_sec")
            ceiling = 1e6 / median(mine, "redis_cpu_us_per_job")
            share = rate / ceiling
            print(row([
                str(mine[0]["workers"]), mine[0]["sharing"],
                spread(mine, "jobs_per_sec", kilo),
                spread(theirs, "jobs_per_sec", kilo) if theirs else "–",
                per_round(mine, theirs, "jobs_per_sec"),
                both(mine, theirs, "client_cpu_us_per_job"),
                both(mine, theirs, "redis_cpu_us_per_job"),
                kilo(ceiling), f"{share:.0%}", verdict(share >= CEILING_SHARE),
            ]))
        print()
        print("Memory while busy: peak RSS of the process, MiB (and with the workers built, idle)\n")
        print(row(["workers", "backend", "bullmq-rs peak", "Node peak", "ours ÷ Node per round",
                   "bullmq-rs before run", "Node before run"]))
        print("|---:|---|---:|---:|---|---:|---:|")
        for mode in busy:
            mine, theirs = runs.get((OURS, mode), []), runs.get((NODE, mode), [])
            if not mine:
                continue
            print(row([
                str(mine[0]["workers"]), mine[0]["sharing"],
                spread(mine, "peak_rss_kb", mib),
                spread(theirs, "peak_rss_kb", mib) if theirs else "–",
                per_round(mine, theirs, "peak_rss_kb"),
                mib(median(mine, "rss_idle_kb")),
                mib(median(theirs, "rss_idle_kb")) if theirs else "–",
            ]))
        print()

    idle = modes_of(runs, "idle")
    if idle:
        print(f"Idle workers: RSS per added worker, (RSS_N − RSS_0) / N, KB "
              f"(goal: ≤ {KB_PER_WORKER} KB), and Redis connections per worker\n")
        print(row(["workers", "backend", "bullmq-rs KB/worker", "Node KB/worker",
                   "ours ÷ Node per round", "bullmq-rs conns/worker", "Node conns/worker",
                   "goal"]))
        print("|---:|---|---:|---:|---|---:|---:|---|")
        for mode in idle:
            mine, theirs = runs.get((OURS, mode), []), runs.get((NODE, mode), [])
            if not mine:
                continue
            kb = median(mine, "kb_per_worker")
            blocked = min(r["blocked"] for r in mine)
            note = "" if blocked >= mine[0]["workers"] else f" (only {blocked} blocked)"
            print(row([
                str(mine[0]["workers"]), mine[0]["sharing"],
                spread(mine, "kb_per_worker", one) + note,
                spread(theirs, "kb_per_worker", one) if theirs else "–",
                per_round(mine, theirs, "kb_per_worker"),
                f"{median(mine, 'connections_per_worker'):.2f}",
                f"{median(theirs, 'connections_per_worker'):.2f}" if theirs else "–",
                verdict(kb <= KB_PER_WORKER),
            ]))
        print()
        for line in marginal(runs, idle):
            print(line)


if __name__ == "__main__":
    table_script(main, __doc__)
