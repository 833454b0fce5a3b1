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


def symbolize(line):
    """'count module+0xOFF sym' from alloc_count.so: names the function with addr2line when the
    module has no dynamic symbol for it (the static library inside the consumer)."""
    parts = line.split()
    if len(parts) == 3 and parts[2] == "?" and "+0x" in parts[1]:
        mod, off = parts[1].rsplit("+", 1)
        try:
            fn = subprocess.run(["addr2line", "-f", "-e", mod, off], capture_output=True,
                                text=True, timeout=10).stdout.split("\n")[0]
            if fn and fn != "??":
                return f"{parts[0]} {fn} ({parts[1]})"
        except (OSError, subprocess.SubprocessError):
            pass
    return line


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
        st = last_json(read("kc-stats"))
        if st:
            # Fetch counters are kept per broker: sum them; the extremes over the brokers. The
            # last request's size (after the run's idle linger, T3) is the steady-state
            # incremental Fetch: the largest over the brokers is reported.
            row["kc_stats_brokers"] = st.get("brokers")
            for k in ("fetch_requests", "fetch_request_bytes"):
                v = deep(st, k, sum)
                if v is not None:
                    row[k] = v
            for k, f in (("fetch_request_bytes_min", min), ("fetch_request_bytes_max", max),
                         ("fetch_request_bytes_last", max)):
                v = deep(st, k, f)
                if v is not None:
                    row[k] = v
            row["brokers_fetched"] = sum(1 for b in st.get("brokers", []) if b.get("fetch_requests"))
        sites = read("alloc-sites")
        if sites:
            row["alloc_sites_top"] = [symbolize(l) for l in sites.splitlines()[1:9]]
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
        ("fetch_request_bytes_max", "largest Fetch B", "{:,.0f}"),
        ("fetch_request_bytes_last", "last Fetch B", "{:,.0f}"),
        ("allocs_per_record", "allocs / rec", "{:.6f}")]


def kc_ref(consumer):
    """The kconsume row a peer is compared with: same mode (group, or assign for the peers'
    assign/direct modes), 1 worker, io_uring."""
    group = consumer.endswith("-group") or consumer.startswith("kconsume-group")
    return "kconsume-group-w1-io_uring" if group else "kconsume-assign-w1-io_uring"


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
          "ratio = kconsume (same mode — group, or assign for assign/direct — 1 worker, io_uring) "
          "÷ peer in CPU per record. "
          "Settings and method: perf/README.md.", ""]
    if a.quick == "1":
        md[1:1] = ["", "**PERF_QUICK=1: tiny topics and one run, to check the harness end to end. "
                   "These figures mean nothing; run `make perf` on a quiet machine for the report.**"]
    md += ["<<TARGETS>>", ""]
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
            agg[c] = {k: med(ok, k) for k in [k for k, _, _ in COLS] + ["brokers_fetched"]}
            agg[c]["runs_ok"], agg[c]["runs"] = len(ok), len(ok) + len(bad)
            agg[c]["bytes_per_fetch_approx"] = any(r.get("bytes_per_fetch_approx") for r in ok)
            agg[c]["note"] = bad[0]["error"] if bad else ""
        for c in consumers:
            x, ref = agg[c], agg.get(kc_ref(c), {})
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
    fig_text = open(a.figures).read() if a.figures and os.path.exists(a.figures) else ""
    figs = machine_figures(fig_text)
    summary["machine_figures"] = figs
    tmd, tlist = targets(summary["cases"], figs)
    summary["targets"] = tlist
    md[md.index("<<TARGETS>>")] = "\n".join(tmd)
    # Where the worst kconsume row allocated in its steady-state window (alloc_count.so).
    worst = max((r for r in runs if r.get("alloc_sites_top") and r.get("allocs_per_record") is not None),
                key=lambda r: r["allocs_per_record"], default=None)
    if worst:
        md += [f"## Heap allocations by call site ({worst['case']} {worst['consumer']} run {worst['run']}: "
               f"{worst.get('allocs_window')} in the window of {worst.get('allocs_window_records')} records)",
               "", "```", *worst["alloc_sites_top"], "```", ""]
    if fig_text.strip():
        md += ["## Machine figures (build/release/perf/bench_decode, one core)", "", "```",
               fig_text.rstrip(), "```", ""]
    md += ["Raw runs: latest.json (`runs`).", ""]
    summary["runs"] = runs
    open(os.path.join(a.out, "LATEST.md"), "w").write("\n".join(md))
    json.dump(summary, open(os.path.join(a.out, "latest.json"), "w"), indent=1)


def machine_figures(text):
    """The physical limits bench_decode measured (one core): CRC32C, memcpy, codec decode."""
    f = {}
    for key, rx in (("crc32c_gb_s", r"crc32c sse4\.2 x3\s+([\d.]+) GB/s"),
                    ("crc32c_table_gb_s", r"crc32c table\s+([\d.]+) GB/s"),
                    ("memcpy_cache_gb_s", r"memcpy\s+1 MiB\s+([\d.]+) GB/s"),
                    ("memcpy_mem_gb_s", r"memcpy\s+64 MiB\s+([\d.]+) GB/s"),
                    ("zstd_decode_mb_s", r"decode zstd\s+([\d.]+) MB/s"),
                    ("lz4_decode_mb_s", r"decode lz4\s+([\d.]+) MB/s"),
                    ("gzip_decode_mb_s", r"decode gzip\s+([\d.]+) MB/s"),
                    ("records_iter_m_s", r"records 100B iter only\s+([\d.]+) M records/s")):
        m = re.search(rx, text)
        if m:
            f[key] = float(m.group(1))
    return f


def targets(cases, figs):
    """The benchmark's targets, each PASS / FAIL with the measured gap, or n/a when a figure is
    missing. Returns (markdown lines, list of dicts)."""
    out = []

    def get(case, who, key):
        v = cases.get(case, {})
        return v.get(who, {}).get(key) if isinstance(v, dict) else None

    def add(what, measured, bound, ok, note=""):
        out.append({"target": what, "measured": measured, "bound": bound,
                    "result": "n/a" if ok is None else "PASS" if ok else "FAIL", "note": note})

    def ratio_target(case, peer, bound, label):
        kc = kc_ref(peer)
        a, b = get(case, kc, "cpu_s_per_mrec"), get(case, peer, "cpu_s_per_mrec")
        if a is None or b is None:
            add(f"{label}: {kc} ÷ {peer}", None, f"≤ {bound}", None, "a row is missing")
            return
        r = a / b
        add(f"{label}: {kc} ÷ {peer}", f"{r:.2f} ({a:.3f} vs {b:.3f} CPU s/M rec)", f"≤ {bound}",
            r <= bound, "" if r <= bound else f"gap {r / bound:.2f}× the bound")

    for peer, bound in (("librdkafka-group", 0.3), ("librdkafka-assign", 0.3),
                        ("franz-go-group", 0.5), ("franz-go-direct", 0.5), ("java-group", 0.5)):
        ratio_target("T1", peer, bound, "T1 CPU/rec")
    w1 = get("MEM-T2-zstd", "kconsume-assign-w1-io_uring", "rec_s")
    w2 = get("MEM-T2-zstd", "kconsume-assign-w2-io_uring", "rec_s")
    if w1 and w2:
        add("MEM-T2-zstd records/s, 2 workers ÷ 1 worker", f"{w2 / w1:.2f} ({w2:,.0f} vs {w1:,.0f})",
            "≥ 1.5", w2 / w1 >= 1.5)
    else:
        add("MEM-T2-zstd records/s, 2 workers ÷ 1 worker", None, "≥ 1.5", None, "a row is missing")
    for peer in ("librdkafka-group", "librdkafka-assign"):
        ratio_target("T2-zstd", peer, 0.7, "T2-zstd CPU/rec")
    for case, nb in (("T3", 3), ("MEM-T3", 3)):
        for kc in ("kconsume-assign-w1-io_uring", "kconsume-group-w1-io_uring"):
            bf = get(case, kc, "brokers_fetched")
            req = get(case, kc, "fetch_requests")
            add(f"{case} {kc}: brokers fetched from (one Fetch in flight each)",
                None if bf is None else f"{bf:.0f} brokers, {req:,.0f} requests" if req else f"{bf:.0f}",
                f"= {nb}", None if bf is None else bf == nb)
            last = get(case, kc, "fetch_request_bytes_last")
            rd = get(case, "librdkafka-assign" if "assign" in kc else "librdkafka-group",
                     "fetch_request_bytes_last")
            add(f"{case} {kc}: steady-state incremental Fetch request bytes (1,000 partitions)",
                None if last is None else f"{last:,.0f} B (librdkafka: "
                + (f"{rd:,.0f} B" if rd else "n/a") + ")", "≤ 200", None if last is None else last <= 200,
                "" if last is None or last <= 200 else f"gap {last - 200:,.0f} B")
    allocs = [(c, case, x.get("allocs_per_record")) for case, v in cases.items() if isinstance(v, dict)
              for c, x in v.items() if c.startswith("kconsume") and x.get("allocs_per_record") is not None]
    if allocs:
        c, case, worst = max(allocs, key=lambda t: t[2])
        add("heap allocations per record (worst kconsume row)", f"{worst:.6f} ({case} {c})", "≤ 0.001",
            worst <= 0.001)
    else:
        add("heap allocations per record", None, "≤ 0.001", None, "no counts (alloc_count.so missing?)")
    rss = [(c, x.get("maxrss_mib")) for c, x in cases.get("T3", {}).items()
           if c.startswith("kconsume") and x.get("maxrss_mib")] if isinstance(cases.get("T3"), dict) else []
    if rss:
        c, worst = max(rss, key=lambda t: t[1])
        add("T3 peak RSS (worst kconsume row)", f"{worst:.0f} MiB ({c})",
            "≤ queued.max.bytes (256 MiB) + 32 MiB", worst <= 288)
    else:
        add("T3 peak RSS", None, "≤ 288 MiB", None, "no T3 kconsume rows")
    # The memory contract (queued.max.bytes) holds for every topic, not only T3's small records: compressed
    # topics are where frames held per response once exceeded the cap (perf/README.md).
    rss_all = [(c, case, x.get("maxrss_mib")) for case, v in cases.items() if isinstance(v, dict)
               for c, x in v.items() if c.startswith("kconsume") and x.get("maxrss_mib")]
    if rss_all:
        c, case, worst = max(rss_all, key=lambda t: t[2])
        add("peak RSS, every case (worst kconsume row)", f"{worst:.0f} MiB ({case} {c})",
            "≤ queued.max.bytes (256 MiB) + 32 MiB", worst <= 288)
    lat = {r["consumer"]: r for r in cases.get("latency", [])} if isinstance(cases.get("latency"), list) else {}
    k, l = lat.get("kconsume-w1", {}).get("lat_p99_ms"), lat.get("librdkafka-assign", {}).get("lat_p99_ms")
    add("latency p99, kconsume (1 worker) vs librdkafka",
        None if k is None or l is None else f"{k} ms vs {l} ms", "kconsume ≤ librdkafka",
        None if k is None or l is None else k <= l)
    md = ["## Targets", "", "| target | measured | bound | result | note |", "|---|---|---|---|---|"]
    for t in out:
        md.append(f"| {t['target']} | {t['measured'] if t['measured'] is not None else 'n/a'} | "
                  f"{t['bound']} | **{t['result']}** | {t['note']} |")
    # The ceiling next to the machine's own limits (no bound: context for the figures above).
    md += ["", "Memory-served ceiling (kconsume, best row) next to the machine (one core, "
           "bench_decode):", "", "| case | records/s | value GB/s | machine |", "|---|---|---|---|"]
    for case, note in (("MEM-T1", "memcpy {memcpy_cache_gb_s} GB/s in cache, {memcpy_mem_gb_s} GB/s "
                                  "from memory; CRC32C {crc32c_gb_s} GB/s"),
                       ("MEM-T2-zstd", "zstd decode {zstd_decode_mb_s} MB/s per core"),
                       ("MEM-T2-lz4", "lz4 decode {lz4_decode_mb_s} MB/s per core"),
                       ("MEM-T2-gzip", "gzip decode {gzip_decode_mb_s} MB/s per core")):
        v = cases.get(case, {})
        rows = [(c, x) for c, x in v.items() if c.startswith("kconsume") and x.get("rec_s")] \
            if isinstance(v, dict) else []
        try:
            mtext = note.format(**figs)
        except KeyError:
            mtext = "n/a (bench_decode figures missing)"
        if rows:
            c, x = max(rows, key=lambda t: t[1]["rec_s"])
            md.append(f"| {case} | {x['rec_s']:,.0f} ({c}) | {x['mb_s'] / 1000:.3f} | {mtext} |")
        else:
            md.append(f"| {case} | n/a | n/a | {mtext} |")
    return md, out


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
    s.add_argument("--quick", default="0")
    a = p.parse_args()
    {"record": cmd_record, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    main()
