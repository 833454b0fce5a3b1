#!/usr/bin/env python3
"""Live per-partition view for the demo's group mode: reads the newest stats object (one JSON
object per line, the library's stats contract) of each member's --stats file and redraws a table
of partition, owner, position, high watermark, lag, rate and worker about twice a second, until
the file DONE exists (the demo creates it once every member has exited).

    demo_live.py [--interval S] DONE STATS_FILE...
"""
import json
import os
import sys
import time


def last_object(path):
    """The newest complete line of a stats file, parsed; None when there is none yet."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 262144))
            lines = f.read().split(b"\n")
    except OSError:
        return None
    for line in reversed(lines[:-1]):  # the last piece may be a line being written
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def rows_of(files):
    """(topic, partition) -> row, from every member's newest stats object."""
    rows = {}
    for path in files:
        obj = last_object(path)
        if not obj:
            continue
        name = os.path.basename(path).replace("stats-", "").replace(".jsonl", "")
        member = (obj.get("group") or {}).get("member_id") or ""
        for p in obj.get("partitions", []):
            key = (p.get("topic"), p.get("partition"))
            rows[key] = {
                "owner": "%s %s" % (name, member[:8]),
                "position": p.get("position", -1),
                "hw": p.get("high_watermark", -1),
                "lag": p.get("lag", -1),
                "worker": p.get("worker", "-"),
                "ts": obj.get("ts_ms", 0),
            }
    return rows


def render(rows, prev, dt):
    out = ["%-16s %-12s %10s %10s %8s %10s %6s" % (
        "partition", "owner", "position", "hw", "lag", "records/s", "worker")]
    for key in sorted(rows, key=lambda k: (str(k[0]), k[1] if k[1] is not None else -1)):
        r = rows[key]
        before = prev.get(key)
        rate = (r["position"] - before["position"]) / dt if before and dt > 0 else 0.0
        out.append("%-16s %-12s %10d %10d %8d %10.0f %6s" % (
            "%s[%s]" % key, r["owner"], r["position"], r["hw"], r["lag"], max(rate, 0.0),
            r["worker"]))
    return out


def main(argv):
    interval = 0.5
    if len(argv) > 1 and argv[0] == "--interval":
        interval, argv = float(argv[1]), argv[2:]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    done, files = argv[0], argv[1:]
    tty = sys.stderr.isatty()
    prev, last_lines, last_t = {}, 0, time.monotonic()
    while True:
        running = not os.path.exists(done)
        now = time.monotonic()
        rows = rows_of(files)
        lines = render(rows, prev, now - last_t)
        prev, last_t = rows, now
        if tty:
            sys.stderr.write(("\x1b[%dA" % last_lines if last_lines else "") +
                             "".join(line + "\x1b[K\n" for line in lines))
        elif not running:
            sys.stderr.write("\n".join(lines) + "\n")
        sys.stderr.flush()
        last_lines = len(lines)
        if not running:
            return 0
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
