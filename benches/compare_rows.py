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


def verdict(ok):
    return "met" if ok else "**missed**"
