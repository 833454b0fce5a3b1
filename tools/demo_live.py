#!/usr/bin/env python3
"""Live view of the demo's group mode, and the signal that the group has read everything.

    demo_live.py [--interval S] DIR PARTITIONS MEMBER...

Every S seconds (default 0.5) it reads the newest stats object (the library's stats JSON, one
object per line) of each member from DIR/stats-MEMBER.jsonl and shows one row per partition:
which member owns it (demo name and the start of its group member id), position (the next
offset to deliver: everything before it was printed), end (high watermark), lag, records/s,
the member's worker that ran its last batch, and a progress bar; above it, one line per member
(state, epoch, partitions owned, or not started / gone). On a terminal the table is redrawn in
place; otherwise ownership changes are printed as they are seen, with a progress line every 2 s,
and the full table once at the end.

It also writes DIR/progress (replaced atomically): "FRACTION COMPLETE OWNED..." where FRACTION
is the share of the PARTITIONS partitions' records before the highest position any member
reported, COMPLETE is 1 once every partition's highest position reached its high watermark
(so the union of what the members printed covers the whole topic), and OWNED is MEMBER=N for
each member still running. demo.sh uses it to time the late join, the early leave and the stop.
A member is treated as gone once DIR/exited-MEMBER exists (demo.sh writes it when it exits).
On a terminal, the lines of DIR/events (demo.sh's join/leave/stop messages) head the table.
The view ends when DIR/members-done exists. Positions only move forward between owners when
revocation commits what was printed; the view takes the highest one seen per partition.
"""
import json
import os
import sys
import time

BAR = 20


def last_object(path):
    """The newest complete line of a stats file, parsed; None when there is none yet."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 65536))
            lines = f.read().split(b"\n")
    except OSError:
        return None
    for line in reversed(lines[:-1]):  # the last piece may be a line being written
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


class View:
    def __init__(self, dirname, partitions, members):
        self.dir, self.n, self.members = dirname, partitions, members
        self.best = {}  # partition -> highest position seen
        self.end = {}  # partition -> high watermark seen
        self.rate = {}  # partition -> records/s between the owner's last two reports
        self.seen = {}  # partition -> (ts_ms, position) of the last report used for the rate
        self.last_owner = {}  # partition -> row of the last running member that reported it
        self.owner_seen = {}  # member -> tuple of partitions last reported (change lines)
        # seconds since the demo started its members (KC_DEMO_T0, wall clock), so the view's
        # times and demo.sh's read alike; else since the view started
        self.t0 = time.time() if "KC_DEMO_T0" not in os.environ else float(
            os.environ["KC_DEMO_T0"])

    def read(self):
        """(member status lines, partition -> row)."""
        status, rows = [], {}
        for m in self.members:
            path = os.path.join(self.dir, "stats-%s.jsonl" % m)
            gone = os.path.exists(os.path.join(self.dir, "exited-%s" % m))
            obj = last_object(path) if os.path.exists(path) else None
            if obj is None:
                status.append((m, "gone" if gone else
                               ("starting" if os.path.exists(path) else "not started"), []))
                continue
            grp = obj.get("group") or {}
            mid = (grp.get("member_id") or "")[:8]
            owned = []
            for p in obj.get("partitions", []):
                k = p.get("partition")
                pos, hw = p.get("position", -1), p.get("high_watermark", -1)
                if pos is not None and pos > self.best.get(k, -1):
                    self.best[k] = pos
                if hw is not None and hw > self.end.get(k, -1):
                    self.end[k] = hw
                if gone:
                    continue  # its last report is history: it owns nothing now
                owned.append(k)
                ts = obj.get("ts_ms", 0)
                row = rows.get(k)
                if row is None or ts > row["ts"]:
                    rows[k] = {"owner": "%s %s" % (m, mid), "worker": p.get("worker", -1),
                               "ts": ts}
                # The rate from the reports' own clocks: the view and the stats run at about the
                # same period, so differences between two views alias (0, then double).
                before = self.seen.get(k)
                if pos is not None and pos >= 0 and (before is None or ts > before[0]):
                    if before is not None and before[1] >= 0:
                        self.rate[k] = max(pos - before[1], 0) * 1000.0 / (ts - before[0])
                    self.seen[k] = (ts, pos)
            if gone:
                state = "gone (closed: committed and left the group)"
            else:
                state = "%s epoch %s, %d partitions" % (grp.get("state", "?"),
                                                       grp.get("epoch", "?"), len(owned))
            status.append((m, "%s (%s)" % (state, mid) if mid else state, sorted(owned)))
        self.last_owner.update(rows)
        for k in range(self.n):  # nobody running reports it: show who had it last
            if k not in rows and k in self.last_owner:
                rows[k] = self.last_owner[k]
                self.rate[k] = 0.0
        return status, rows

    def progress(self):
        total = sum(self.end.get(k, 0) for k in range(self.n))
        done = sum(min(self.best.get(k, 0), self.end.get(k, 0)) for k in range(self.n))
        # an empty partition (end 0) reports position -1: nothing was delivered from it
        complete = all(self.end.get(k, -1) == 0 or
                       self.end.get(k, -1) >= 0 and self.best.get(k, -1) >= self.end[k]
                       for k in range(self.n))
        return (done / total if total else 0.0), complete

    def table(self, status, rows, now):
        out = []
        try:  # demo.sh's events (terminal mode only; see say() there)
            with open(os.path.join(self.dir, "events")) as f:
                out += [line.rstrip("\n") for line in f]
        except OSError:
            pass
        out += ["member %s: %s" % (m, s) for m, s, _ in status]
        out.append("%-10s %-12s %9s %9s %8s %10s %6s  %s" % (
            "partition", "owner", "position", "end", "lag", "records/s", "worker", "progress"))
        total_rate = 0.0
        for k in range(self.n):
            pos, end = self.best.get(k, -1), self.end.get(k, -1)
            rate = self.rate.get(k, 0.0)
            total_rate += rate
            row = rows.get(k, {"owner": "-", "worker": -1})
            lag = "%d" % max(end - max(pos, 0), 0) if end >= 0 else "-"
            fill = int(max(pos, 0) * BAR / end) if end > 0 else (BAR if end == 0 else 0)
            out.append("%-10s %-12s %9s %9s %8s %10.0f %6s  [%s]" % (
                "demo[%d]" % k, row["owner"], pos if pos >= 0 else "-",
                end if end >= 0 else "-", lag, rate,
                row["worker"] if row["worker"] >= 0 else "-",
                "#" * fill + "." * (BAR - fill)))
        frac, complete = self.progress()
        out.append("%-10s %5.1f%% read in %.1f s, %.0f records/s now%s" % (
            "total", 100 * frac, now - self.t0, total_rate,
            ", every partition read to its end" if complete else ""))
        return out

    def changes(self, status, now):
        """Ownership change lines (non-terminal output)."""
        out = []
        for m, _, owned in status:
            t = tuple(owned)
            if self.owner_seen.get(m, ()) != t:
                out.append("live: %5.1f s: member %s owns %s" % (
                    now - self.t0, m, ",".join(map(str, t)) if t else "nothing"))
                self.owner_seen[m] = t
        return out

    def write_progress(self, status):
        frac, complete = self.progress()
        owned = " ".join("%s=%d" % (m, len(o)) for m, _, o in status)
        tmp = os.path.join(self.dir, "progress.tmp")
        with open(tmp, "w") as f:
            f.write("%.4f %d %s\n" % (frac, int(complete), owned))
        os.replace(tmp, os.path.join(self.dir, "progress"))


def main(argv):
    interval = 0.5
    if len(argv) > 1 and argv[0] == "--interval":
        interval, argv = float(argv[1]), argv[2:]
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    view = View(argv[0], int(argv[1]), argv[2:])
    done = os.path.join(argv[0], "members-done")
    tty = sys.stderr.isatty()
    last_lines, last_line_t = 0, 0.0  # wall clock
    while True:
        running = not os.path.exists(done)
        now = time.time()
        status, rows = view.read()
        view.write_progress(status)
        lines = view.table(status, rows, now)
        if tty:
            sys.stderr.write(("\x1b[%dA" % last_lines if last_lines else "") +
                             "".join(line + "\x1b[K\n" for line in lines))
            last_lines = len(lines)
        else:
            for line in view.changes(status, now):
                sys.stderr.write(line + "\n")
            if not running:
                sys.stderr.write("\n".join(lines) + "\n")
            elif now - last_line_t >= 2:
                sys.stderr.write("live: %s\n" % lines[-1].split(None, 1)[1])
                last_line_t = now
        sys.stderr.flush()
        if not running:
            return 0
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
