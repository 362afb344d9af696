"""What the compare-*-table.py scripts share: reading the harnesses' JSON lines and the
figures' medians. (Python puts a script's folder on its path, so they import it as is.)"""

import json
import statistics


def load(path):
    """Rows of the file, grouped as {(impl, mode): [row, ...]}."""
    runs = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                row = json.loads(line)
                runs.setdefault((row["impl"], row["mode"]), []).append(row)
    return runs


def median(rows, metric):
    return statistics.median(r[metric] for r in rows)


def present(runs, modes, impls):
    """The modes of `modes` that some implementation of `impls` ran, after printing how many
    jobs each ran and over how many rounds."""
    jobs = sorted({r["jobs"] for rows in runs.values() for r in rows})
    rounds = max(len(rows) for rows in runs.values())
    print(f"Jobs per mode: {', '.join(map(str, jobs))}; medians of {rounds} round(s).\n")
    return [m for m in modes if any((i, m) in runs for i in impls)]


def throughput_cells(rows):
    """A table row's jobs/s median and range, client and Redis CPU µs/job cells."""
    rates = [r["jobs_per_sec"] for r in rows]
    return (
        f"{median(rows, 'jobs_per_sec'):,.0f} | {min(rates):,.0f}–{max(rates):,.0f} "
        f"| {median(rows, 'client_cpu_us_per_job'):.1f} "
        f"| {median(rows, 'redis_cpu_us_per_job'):.1f}"
    )


def print_raw_table(runs, modes, impls, extra_heads=(), extra_cells=lambda rows: ()):
    """The first table of an add or worker comparison: one row per (mode, implementation)
    that ran, with its throughput cells, then `extra_heads` columns filled by
    `extra_cells(rows)`."""
    heads = ["mode", "implementation", "jobs/s", "jobs/s range", "client CPU µs/job"]
    heads += ["Redis CPU µs/job", *extra_heads]
    print("| " + " | ".join(heads) + " |")
    print("|---|---|" + "---:|" * (len(heads) - 2))
    for mode in modes:
        for impl in impls:
            rows = runs.get((impl, mode))
            if not rows:
                continue
            cells = [throughput_cells(rows), *extra_cells(rows)]
            print(f"| {mode} | {impl} | {' | '.join(cells)} |")
    print()


def table_script(main, doc):
    """Runs a table script's `main` on its one argument, else exits with its `doc`."""
    import sys

    if len(sys.argv) != 2:
        sys.exit(doc)
    main(sys.argv[1])


def verdict(ok):
    return "met" if ok else "**missed**"


# The ours-against-Node table of benches/compare-postgres.sh (any two implementations, any
# metrics), also a command of its own:
#
#   python3 benches/compare_rows.py RESULTS.jsonl METRIC[:OP:TARGET]...
#
# e.g. `jobs_per_sec:>=:1.1 client_cpu_us_per_job:<=:0.5`: per mode (in the order the file
# first names them), each metric's median for bullmq-rs and bullmq-node and their ratio
# (ours / Node), checked against TARGET with OP (`>=` or `<=`) when given.

OPS = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b}
# Column names of the metrics the harnesses print; any other shows as its field name.
LABELS = {
    "jobs_per_sec": ("jobs/s", "jobs/s"),
    "client_cpu_us_per_job": ("client CPU µs/job", "client CPU"),
    "redis_cpu_us_per_job": ("Redis CPU µs/job", "Redis CPU"),
    "pg_cpu_us_per_job": ("PG CPU µs/job", "PG CPU"),
}


def parse_metric(spec):
    """`METRIC[:OP:TARGET]` as (metric, op or None, target or None)."""
    parts = spec.split(":")
    if len(parts) == 1:
        return parts[0], None, None
    if len(parts) != 3 or parts[1] not in OPS:
        raise SystemExit(f"bad metric {spec!r}: METRIC[:>=|<=:TARGET]")
    return parts[0], parts[1], float(parts[2])


def ratio_table(runs, specs, ours="bullmq-rs", peer="bullmq-node"):
    """The markdown lines of the table, from `load`'s runs and parsed metric specs."""
    modes = []
    for _, mode in runs:
        if mode not in modes:
            modes.append(mode)
    head = ["mode", "rounds"]
    for metric, _, _ in specs:
        label = LABELS.get(metric, (metric,))[0]
        head += [f"{label} ours", "node", "ours/node"]
    head.append("targets")
    lines = ["| " + " | ".join(head) + " |", "|---|---:|" + "---:|" * (3 * len(specs)) + "---|"]
    for mode in modes:
        mine, theirs = runs.get((ours, mode)), runs.get((peer, mode))
        if not mine or not theirs:
            continue
        cells = [mode, f"{len(mine)}/{len(theirs)}"]
        checks = []
        for metric, op, target in specs:
            a, b = median(mine, metric), median(theirs, metric)
            ratio = a / b if b else float("inf")
            fmt = "{:,.0f}" if a >= 100 else "{:,.1f}"
            cells += [fmt.format(a), fmt.format(b), f"{ratio:.2f}x"]
            if op:
                short = LABELS.get(metric, (metric, metric))[1]
                checks.append(f"{short} {op}{target:g}x: {verdict(OPS[op](ratio, target))}")
        cells.append("; ".join(checks) or "–")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    import sys

    if len(sys.argv) < 3:
        sys.exit("usage: compare_rows.py RESULTS.jsonl METRIC[:OP:TARGET]...")
    print("\n".join(ratio_table(load(sys.argv[1]), [parse_metric(s) for s in sys.argv[2:]])))
