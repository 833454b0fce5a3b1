#!/usr/bin/env python3
"""The compatibility table from tests/compat/run-compat's output.

    table.py RESULTS [--readme README.md]

RESULTS holds "compat version=V feature=F result=R seconds=S" lines (other lines are ignored;
a later line for the same version and feature wins, so a re-run of one version can be appended).
Prints the Markdown table: one row per feature, one column per version (oldest first), each cell
pass, FAIL or n/a (the broker does not offer the feature), and a last row with each version's wall
time. With --readme, the table replaces what lies between the markers
"<!-- compat-table:begin -->" and "<!-- compat-table:end -->" in that file, so the README's table
is only ever this script's output; exit 2 when the markers are missing."""
import re
import sys

LINE = re.compile(r"^compat version=(\S+) feature=(\S+) result=(pass|fail|n/a) seconds=(\d+)$")
BEGIN, END = "<!-- compat-table:begin -->", "<!-- compat-table:end -->"

# Row labels; a feature not listed keeps its name. The order is the suite's.
LABELS = {
    "manual_assign_seek_commit": "manual assignment, seek, commit, committed",
    "compressions": "gzip, lz4, zstd, snappy batches (manual, exactly once)",
    "default_group": "a group with default settings (CLI, `-G` only)",
    "classic_range": "classic group of 3, range (a third joins, the first leaves, under load: nothing missing, nothing twice)",
    "classic_roundrobin": "classic group of 3, roundrobin (same)",
    "classic_cooperative_sticky": "classic group of 3, cooperative-sticky (same)",
    "kip848_group": "KIP-848 group (churn, kill -9)",
    "kip848_forced_refused": "`group.protocol=consumer` refused, naming `group.protocol=classic`",
    "read_committed": "read_committed over a transactional topic",
    "tls": "TLS (manual assignment, commit)",
    "scram": "SASL_SSL SCRAM-SHA-512 (classic group; wrong password refused)",
    "broker_restart": "coordinator restart under load (default group settings)",
}
CELL = {"pass": "pass", "fail": "FAIL", "n/a": "n/a"}


def version_key(v):
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"[.-]", v))


def parse(text):
    results, order = {}, []
    for line in text.splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        version, feature, result, seconds = m.groups()
        if feature != "wall" and feature not in order:
            order.append(feature)
        results[(version, feature)] = (result, int(seconds))
    return results, order


def table(results, order):
    versions = sorted({v for v, _ in results}, key=version_key)
    rows = ["| feature | " + " | ".join(versions) + " |", "|---" * (len(versions) + 1) + "|"]
    for f in order:
        cells = [CELL[results[(v, f)][0]] if (v, f) in results else "" for v in versions]
        rows.append("| " + LABELS.get(f, f) + " | " + " | ".join(cells) + " |")
    walls = []
    for v in versions:
        w = results.get((v, "wall"))
        walls.append(f"{w[1]} s" if w else "")
    rows.append("| wall time (boot, features, down) | " + " | ".join(walls) + " |")
    return "\n".join(rows) + "\n"


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--readme"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        results, order = parse(f.read())
    if not results:
        print(f"table.py: no result lines in {argv[1]}", file=sys.stderr)
        return 1
    t = table(results, order)
    if len(argv) == 2:
        sys.stdout.write(t)
        return 0
    with open(argv[3]) as f:
        doc = f.read()
    b, e = doc.find(BEGIN), doc.find(END)
    if b < 0 or e < b:
        print(f"table.py: {argv[3]} has no {BEGIN} ... {END} markers", file=sys.stderr)
        return 2
    doc = doc[: b + len(BEGIN)] + "\n" + t + doc[e:]
    with open(argv[3], "w") as f:
        f.write(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
