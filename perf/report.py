#!/usr/bin/env python3
"""perf/run's bookkeeping.
  record --case C --consumer W --run R --expect N --rc RC --dir D
      one JSON line from a consumer run's files in D: out (the consumer's stdout), err,
      time (/usr/bin/time '%e %U %S %M'), kc-stats (kconsume --stats, if any)
  report --runs runs.jsonl --machine machine.json --scale S --elapsed SECS --out DIR
      medians per (case, consumer), ratios to kconsume, LATEST.md, latest.json, PNG charts."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys


def last_json(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


def deep(obj, key, combine):
    """combine() of every number stored under `key` anywhere in a JSON value, or None."""
    found = []
    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k == key and isinstance(v, (int, float)):
                    found.append(v)
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(obj)
    return combine(found) if found else None


def parse_java(text):
    """ConsumerPerformance: a CSV header and one data line, then --print-metrics lines
    'group:name:{tags} : value'."""
    lines = text.splitlines()
    res = {"client": "java"}
    for i, line in enumerate(lines):
        if line.startswith("start.time"):
            cols = [c.strip() for c in line.split(",")]
            # The data line is the next one starting with a date (a WARNING may come between).
            data = next((l for l in lines[i + 1:] if re.match(r"^\d{4}-\d\d-\d\d", l)), None)
            if data is None:
                return None
            vals = [v.strip() for v in data.split(",")]
            row = dict(zip(cols, vals))
            res["records"] = int(row["data.consumed.in.nMsg"])
            res["bytes"] = int(float(row["data.consumed.in.MB"]) * 1024 * 1024)
            rate = float(row["nMsg.sec"])
            res["wall_s"] = res["records"] / rate if rate > 0 else None
            res["rebalance_ms"] = float(row["rebalance.time.ms"])
            break
    metrics = {}
    for line in lines:
        m = re.match(r"^([\w-]+):([\w-]+):\{([^}]*)\}\s*:\s*([-\d.E]+)", line)
        if m:
            metrics[(m.group(1), m.group(2), m.group(3))] = float(m.group(4))
    fetch = [v for (g, n, t), v in metrics.items()
             if g == "consumer-fetch-manager-metrics" and n == "fetch-total" and "topic" not in t]
    if fetch:
        res["fetch_requests"] = int(fetch[0])
    # Average size of all requests the consumer sent (almost all are Fetch in this run).
    size = [v for (g, n, t), v in metrics.items() if g == "consumer-metrics" and n == "request-size-avg"]
    if size:
        res["request_size_avg"] = size[0]
    return res if "records" in res else None


def cmd_record(a):
    d = a.dir
    read = lambda name: open(os.path.join(d, name), errors="replace").read() \
        if os.path.exists(os.path.join(d, name)) else ""
    out, err = read("out"), read("err")
    row = {"case": a.case, "consumer": a.consumer, "run": a.run}
    try:
        res = parse_java(out) if a.consumer.startswith("java") else last_json(out)
    except (KeyError, ValueError, IndexError) as e:
        res, err = None, f"unparsable output ({e!r}); " + err
    t = read("time").split()
    try:
        el, us, sy, rss = float(t[-4]), float(t[-3]), float(t[-2]), int(t[-1])
        row.update(elapsed_s=el, cpu_s=round(us + sy, 3), user_s=us, sys_s=sy, maxrss_mib=round(rss / 1024, 1))
    except (IndexError, ValueError):
        pass
    if res is None or a.rc != 0:
        tail = " | ".join((err or out).strip().splitlines()[-3:])[-300:]
        row["error"] = f"exit {a.rc}: {tail}"
        print(json.dumps(row))
        return
    row.update({k: v for k, v in res.items() if k not in row})
    if a.consumer.startswith("kconsume"):
        row["wall_s"] = row.get("elapsed_s")  # process wall: the CLI prints no timing of its own
        st = last_json(read("kc-stats"))
        if st:
            # The stats object may keep counters per broker: sum them wherever they are nested.
            row["kc_stats"] = st
            for k in ("fetch_requests", "fetch_request_bytes", "allocs_per_record"):
                v = deep(st, k, sum)
                if v is not None:
                    row[k] = v
            for k, f in (("fetch_request_bytes_min", min), ("fetch_request_bytes_max", max)):
                v = deep(st, k, f)
                if v is not None:
                    row[k] = v
    if row.get("records") != a.expect:
        row["error"] = f"read {row.get('records')} records, expected {a.expect}"
    w = row.get("wall_s")
    if w and row.get("records"):
        row["rec_s"] = round(row["records"] / w)
        row["mb_s"] = round(row["bytes"] / 1e6 / w, 1)
        if "cpu_s" in row:
            row["cpu_s_per_mrec"] = round(row["cpu_s"] / (row["records"] / 1e6), 3)
    if row.get("fetch_requests") and row.get("fetch_request_bytes"):
        row["bytes_per_fetch"] = round(row["fetch_request_bytes"] / row["fetch_requests"])
    elif row.get("fetch_requests") and row.get("request_bytes") and row.get("requests"):
        row["bytes_per_fetch"] = round(row["request_bytes"] / row["requests"])  # average request
        row["bytes_per_fetch_approx"] = True
    print(json.dumps(row))


COLS = [("rec_s", "records/s", "{:,.0f}"), ("mb_s", "MB/s", "{:.1f}"),
        ("cpu_s_per_mrec", "CPU s / M rec", "{:.3f}"), ("maxrss_mib", "peak RSS MiB", "{:.0f}"),
        ("fetch_requests", "Fetch requests", "{:,.0f}"), ("bytes_per_fetch", "bytes / Fetch req", "{:,.0f}"),
        ("wall_s", "wall s", "{:.2f}"), ("fetch_request_bytes_min", "smallest Fetch B", "{:,.0f}"),
        ("fetch_request_bytes_max", "largest Fetch B", "{:,.0f}")]


def med(rows, key):
    v = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return statistics.median(v) if v else None


def cmd_report(a):
    os.makedirs(a.out, exist_ok=True)
    runs = [json.loads(l) for l in open(a.runs) if l.strip()]
    machine = json.load(open(a.machine))
    cases = []
    for r in runs:
        if r["case"] not in cases:
            cases.append(r["case"])
    summary = {"machine": machine, "scale": a.scale, "elapsed_s": a.elapsed, "cases": {}}
    md = ["# kconsume benchmark: latest run", "",
          f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine.get('mem_gib')} GiB, kernel "
          f"{machine['kernel']}; load average at start {' '.join(machine['loadavg_at_start'])}.",
          f"Peers: librdkafka {machine['librdkafka']} (Debian), franz-go {machine['franz-go']} "
          f"({machine['go']}), Java consumer {machine['kafka_clients']} ({machine['java']}); "
          f"kconsume {machine['kconsume']}.",
          *([f"**Load average {machine['loadavg_at_start'][0]} at start on {machine['cores']} cores: other work "
             "was running, so these numbers are not comparable with a run on a quiet machine.**"]
            if float(machine["loadavg_at_start"][0]) > 0.5 * machine["cores"] else []),
          f"Scale {a.scale} (PERF_SCALE), whole run {a.elapsed} s. Medians over the runs; "
          "ratio = kconsume (w1, io_uring) ÷ peer in CPU per record. "
          "Settings and method: perf/README.md.", ""]
    for case in cases:
        rows = [r for r in runs if r["case"] == case]
        if case == "latency":
            md += [f"## {case}", "", "| consumer | records | p50 ms | p99 ms | note |", "|---|---|---|---|---|"]
            for r in rows:
                md.append(f"| {r['consumer']} | {r.get('records', '')} | {r.get('lat_p50_ms', '')} | "
                          f"{r.get('lat_p99_ms', '')} | {r.get('error', r.get('note', ''))} |")
            summary["cases"][case] = rows
            md.append("")
            continue
        consumers = []
        for r in rows:
            if r["consumer"] not in consumers:
                consumers.append(r["consumer"])
        agg = {}
        for c in consumers:
            ok = [r for r in rows if r["consumer"] == c and "error" not in r]
            bad = [r for r in rows if r["consumer"] == c and "error" in r]
            agg[c] = {k: med(ok, k) for k, _, _ in COLS}
            agg[c]["runs_ok"], agg[c]["runs"] = len(ok), len(ok) + len(bad)
            agg[c]["bytes_per_fetch_approx"] = any(r.get("bytes_per_fetch_approx") for r in ok)
            agg[c]["note"] = bad[0]["error"] if bad else ""
        ref = agg.get("kconsume-w1-io_uring", {})
        for c in consumers:
            x = agg[c]
            if ref.get("cpu_s_per_mrec") and x.get("cpu_s_per_mrec"):
                x["kc_cpu_ratio"] = round(ref["cpu_s_per_mrec"] / x["cpu_s_per_mrec"], 2)
            if ref.get("rec_s") and x.get("rec_s"):
                x["kc_speed_ratio"] = round(ref["rec_s"] / x["rec_s"], 2)
        summary["cases"][case] = agg
        md += [f"## {case}", "",
               "| consumer | " + " | ".join(h for _, h, _ in COLS) + " | kc CPU/rec ÷ peer | runs | note |",
               "|---" * (len(COLS) + 4) + "|"]
        for c in consumers:
            x = agg[c]
            cells = [f.format(x[k]) if x.get(k) is not None else "n/a" for k, _, f in COLS]
            if x.get("bytes_per_fetch_approx") and x.get("bytes_per_fetch") is not None:
                cells[5] = "~" + cells[5]  # average over all requests (librdkafka counts no bytes per API)
            ratio = f"{x['kc_cpu_ratio']:.2f}" if x.get("kc_cpu_ratio") else "n/a"
            md.append(f"| {c} | " + " | ".join(cells) + f" | {ratio} | {x['runs_ok']}/{x['runs']} | "
                      + x["note"].replace("|", "/")[:160] + " |")
        md.append("")
        chart(a.out, case, consumers, agg)
        if os.path.exists(os.path.join(a.out, f"{case}.png")):
            md += [f"![{case}]({case}.png)", ""]
    if a.figures and os.path.exists(a.figures) and os.path.getsize(a.figures) > 0:
        md += ["## Machine figures (build/release/perf/bench_decode, one core)", "", "```",
               open(a.figures).read().rstrip(), "```", ""]
        summary["machine_figures"] = open(a.figures).read()
    md += ["Raw runs: latest.json (`runs`).", ""]
    summary["runs"] = runs
    open(os.path.join(a.out, "LATEST.md"), "w").write("\n".join(md))
    json.dump(summary, open(os.path.join(a.out, "latest.json"), "w"), indent=1)


def chart(out, case, consumers, agg):
    """Two bar charts side by side (records/s, CPU s per M records) with gnuplot, if present."""
    data = [(c, agg[c].get("rec_s"), agg[c].get("cpu_s_per_mrec")) for c in consumers if agg[c].get("rec_s")]
    if not data:
        return
    dat = os.path.join(out, f".{case}.dat")
    with open(dat, "w") as f:
        for c, r, cpu in data:
            f.write(f'"{c}" {r / 1e6:.4f} {cpu if cpu is not None else 0}\n')
    script = f"""set terminal pngcairo size 1100,420 noenhanced
set output '{os.path.join(out, case + '.png')}'
set multiplot layout 1,2 title '{case} (medians)'
set style fill solid 0.8
set boxwidth 0.7
set xtics rotate by -35 font ',8'
set yrange [0:*]
set title 'million records/s'
plot '{dat}' using 2:xtic(1) with boxes notitle lc rgb '#3070b0'
set title 'CPU s per million records (lower is better)'
plot '{dat}' using 3:xtic(1) with boxes notitle lc rgb '#b05030'
unset multiplot
"""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"report: chart {case}: {e}", file=sys.stderr)
    finally:
        os.unlink(dat)


def cmd_latency_reader(a):
    """kconsume latency: one record timestamp (ms) per stdin line, latency = arrival - stamp."""
    import time
    lat = []
    for line in sys.stdin:
        now_ms = time.time() * 1000
        try:
            lat.append(now_ms - float(line.split()[0]))
        except (ValueError, IndexError):
            continue
        if len(lat) >= a.records:
            break
    lat.sort()
    res = {"records": len(lat)}
    if lat:
        res.update(lat_p50_ms=round(lat[len(lat) // 2], 2), lat_p99_ms=round(lat[len(lat) * 99 // 100], 2))
    print(json.dumps(res))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    for k in ("case", "consumer", "dir"):
        r.add_argument("--" + k, required=True)
    for k in ("run", "expect", "rc"):
        r.add_argument("--" + k, type=int, required=True)
    s = sub.add_parser("report")
    for k in ("runs", "machine", "scale", "elapsed", "out"):
        s.add_argument("--" + k, required=True)
    s.add_argument("--figures", help="bench_decode output to quote, if any")
    lr = sub.add_parser("latency-reader")
    lr.add_argument("--records", type=int, required=True)
    a = p.parse_args()
    {"record": cmd_record, "report": cmd_report, "latency-reader": cmd_latency_reader}[a.cmd](a)


if __name__ == "__main__":
    main()
