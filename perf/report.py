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
    """ConsumerPerformance or ShareConsumerPerformance: a CSV header and one data line, then
    --print-metrics lines 'group:name:{tags} : value'."""
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
            if "rebalance.time.ms" in row:  # ShareConsumerPerformance has no such column
                res["rebalance_ms"] = float(row["rebalance.time.ms"])
            break
    metrics = {}
    for line in lines:
        # Numbers only: some metrics are text (app-info's version "4.4.0", commit id).
        m = re.match(r"^([\w-]+):([\w-]+):\{([^}]*)\}\s*:\s*(-?\d+(?:\.\d+)?(?:E-?\d+)?)\s*$", line)
        if m:
            metrics[(m.group(1), m.group(2), m.group(3))] = float(m.group(4))
    ver = re.search(r"^app-info:version:\{[^}]*\}\s*:\s*(\S+)", text, re.M)
    if ver:
        res["version"] = ver.group(1)
    fetch = [v for (g, n, t), v in metrics.items()
             if g in ("consumer-fetch-manager-metrics", "consumer-share-fetch-manager-metrics")
             and n == "fetch-total" and "topic" not in t]
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
    sc = read("syscalls")
    if sc:
        # perf stat -x, output: "COUNT,UNIT,EVENT,..." for the consumer and /usr/bin/time (whose
        # own share is a few dozen calls and about a millisecond). task-clock is in msec with two
        # decimals (10 us) where /usr/bin/time's CPU comes in 10 ms steps.
        for line in sc.splitlines():
            f = line.split(",")
            if len(f) > 2 and f[2].startswith("raw_syscalls:sys_enter") and f[0].isdigit():
                row["syscalls"] = int(f[0])
            elif len(f) > 2 and f[2].startswith("task-clock") and f[1] == "msec":
                try:
                    row["task_clock_s"] = float(f[0]) / 1e3
                except ValueError:
                    pass
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
            if isinstance(st.get("share"), dict):
                # A share consumer sends ShareFetch, counted in the stats' share section; the
                # Fetch columns (all zero) do not apply.
                for k in ("fetch_request_bytes", "fetch_request_bytes_min", "fetch_request_bytes_max",
                          "fetch_request_bytes_last"):
                    row.pop(k, None)
                row["fetch_requests"] = st["share"].get("fetches")
                row["brokers_fetched"] = len(st.get("brokers", []))
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
        if "syscalls" in row:
            row["syscalls_per_mrec"] = round(row["syscalls"] / (row["records"] / 1e6), 1)
        if "task_clock_s" in row:
            row["task_clock_s_per_mrec"] = round(row["task_clock_s"] / (row["records"] / 1e6), 5)
        # From the first record in hand to the last: the clocks of kc_consume and raw_fetch start
        # at different points (kc_consume's before its assignment or group join and the offset
        # lookups, raw_fetch's at its first Fetch), so MEM-T1 compares the rates after that.
        f_s, f_n = row.get("first_s"), row.get("first_records")
        if isinstance(f_s, (int, float)) and isinstance(f_n, int) and 0 <= f_s < w and f_n < row["records"]:
            row["steady_rec_s"] = round((row["records"] - f_n) / (w - f_s))
    if row.get("records") and "cpu_net_s" in row:
        # kc_consume's per-thread split (read before kc_close): CPU s per million records each.
        m = row["records"] / 1e6
        for k in ("net", "workers", "main", "other"):
            row[f"cpu_{k}_s_per_mrec"] = round(row[f"cpu_{k}_s"] / m, 4)
    if row.get("fetch_requests") and row.get("fetch_request_bytes"):
        row["bytes_per_fetch"] = round(row["fetch_request_bytes"] / row["fetch_requests"])
    elif row.get("fetch_requests") and row.get("request_bytes") and row.get("requests"):
        row["bytes_per_fetch"] = round(row["request_bytes"] / row["requests"])  # average request
        row["bytes_per_fetch_approx"] = True
    print(json.dumps(row))


# kconsume's default queued.max.bytes (runtime/conf_keys.h; perf/run sets no other): the memory
# contract's bound is this plus 32 MiB.
QUEUED_MAX_MIB = 64

COLS = [("rec_s", "records/s", "{:,.0f}"), ("mb_s", "MB/s", "{:.1f}"),
        ("cpu_s_per_mrec", "CPU s / M rec", "{:.3f}"), ("maxrss_mib", "peak RSS MiB", "{:.0f}"),
        ("fetch_requests", "Fetch requests", "{:,.0f}"), ("bytes_per_fetch", "bytes / Fetch req", "{:,.0f}"),
        ("wall_s", "wall s", "{:.2f}"), ("fetch_request_bytes_min", "smallest Fetch B", "{:,.0f}"),
        ("fetch_request_bytes_max", "largest Fetch B", "{:,.0f}"),
        ("fetch_request_bytes_last", "last Fetch B", "{:,.0f}"),
        ("allocs_per_record", "allocs / rec", "{:.6f}"),
        ("first_all_s", "s to a record of every partition", "{:.2f}"),
        ("first_s", "s to the first record", "{:.3f}"),
        ("steady_rec_s", "records/s from the first record", "{:,.0f}"),
        ("idle_cpu_pct", "idle CPU %", "{:.2f}"), ("syscalls_per_mrec", "syscalls / M rec", "{:,.0f}")]


def kc_ref(consumer):
    """The kconsume row a peer is compared with: same mode (group, share, or assign for the peers'
    assign/direct modes), 1 worker, io_uring."""
    if consumer.endswith("-share") or consumer.startswith("kconsume-share"):
        return "kconsume-share-w1-io_uring"
    group = consumer.endswith("-group") or consumer.startswith("kconsume-group")
    return "kconsume-group-w1-io_uring" if group else "kconsume-assign-w1-io_uring"


def med(rows, key):
    v = [r[key] for r in rows if isinstance(r.get(key), (int, float))]
    return statistics.median(v) if v else None


def cmd_report(a):
    os.makedirs(a.out, exist_ok=True)
    runs = [json.loads(l) for l in open(a.runs) if l.strip()]
    machine = json.load(open(a.machine))
    carried = carry(a.carry, runs) if a.carry else None
    cases = []
    for r in runs:
        if r["case"] not in cases and not r["case"].startswith("profile-"):
            cases.append(r["case"])
    summary = {"machine": machine, "scale": a.scale, "elapsed_s": a.elapsed, "cases": {}}
    md = ["# kconsume benchmark: latest run", "",
          f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine.get('mem_gib')} GiB, kernel "
          f"{machine['kernel']}; load average at start {' '.join(machine['loadavg_at_start'])}.",
          f"Peers: librdkafka {machine.get('librdkafka')} ({machine.get('librdkafka_source', '?')}; "
          f"the librdkafka-deb rows: Debian's {machine.get('librdkafka_deb', '?')}, for reference), "
          f"Confluent's Rust client confluent-kafka {machine.get('confluent_kafka_rust', '?')} "
          f"(tokio {machine.get('tokio', '?')}, {machine.get('rustc', '?')}), franz-go {machine['franz-go']} "
          f"({machine['go']}), Java ConsumerPerformance on {machine['kafka_clients']} ({machine['java']}); "
          f"brokers {machine.get('broker', '?')} (share groups: Kafka {machine.get('share_broker', '?')}, "
          f"Java's ShareConsumerPerformance on the same client jars); kconsume {machine['kconsume']}.",
          *([f"**Load average {machine['loadavg_at_start'][0]} at start on {machine['cores']} cores: other work "
             "was running, so these numbers are not comparable with a run on a quiet machine.**"]
            if float(machine["loadavg_at_start"][0]) > 0.5 * machine["cores"] else []),
          f"Scale {a.scale} (PERF_SCALE), whole run {a.elapsed} s. Medians over the runs; "
          "ratio = kconsume (same mode — group, or assign for assign/direct — 1 worker, io_uring) "
          "÷ peer in CPU per record. "
          "Settings and method: perf/README.md.", ""]
    if carried:
        md[-1:-1] = [carried, ""]
    if a.quick == "1":
        md[1:1] = ["", "**PERF_QUICK=1: tiny topics and one run, to check the harness end to end. "
                   "These figures mean nothing; run `make perf` on a quiet machine for the report.**"]
    md += ["<<TARGETS>>", ""]
    for case in cases:
        rows = [r for r in runs if r["case"] == case]
        if case == "latency":
            md += latency_md(rows)
            summary["cases"][case] = rows
            latency_chart(a.out, rows)
            if os.path.exists(os.path.join(a.out, "latency.png")):
                md += ["![latency](latency.png)", ""]
            continue
        consumers = []
        for r in rows:
            if r["consumer"] not in consumers:
                consumers.append(r["consumer"])
        agg = {}
        for c in consumers:
            ok = [r for r in rows if r["consumer"] == c and "error" not in r]
            bad = [r for r in rows if r["consumer"] == c and "error" in r]
            agg[c] = {k: med(ok, k) for k in [k for k, _, _ in COLS] + ["brokers_fetched"] + SPLIT}
            agg[c]["version"] = next((r["version"] for r in ok if r.get("version")), None) \
                or peer_version(c, machine)
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
        # Columns no row of this case has are left out (T4's idle figures exist only there).
        cols = [col for col in COLS if any(agg[c].get(col[0]) is not None for c in consumers)]
        md += [f"## {case}", "",
               "| consumer | version | " + " | ".join(h for _, h, _ in cols) + " | kc CPU/rec ÷ peer | runs | note |",
               "|---" * (len(cols) + 5) + "|"]
        for c in consumers:
            x = agg[c]
            cells = [f.format(x[k]) if x.get(k) is not None else "n/a" for k, _, f in cols]
            if x.get("bytes_per_fetch_approx") and x.get("bytes_per_fetch") is not None:
                i = [k for k, _, _ in cols].index("bytes_per_fetch")
                cells[i] = "~" + cells[i]  # average over all requests (librdkafka counts no bytes per API)
            ratio = f"{x['kc_cpu_ratio']:.2f}" if x.get("kc_cpu_ratio") else "n/a"
            md.append(f"| {c} | {x.get('version') or '?'} | " + " | ".join(cells) + f" | {ratio} | {x['runs_ok']}/{x['runs']} | "
                      + x["note"].replace("|", "/")[:160] + " |")
        md.append("")
        if case == "MEM-IO":
            md += io_variants_md(agg, rows)
        chart(a.out, case, consumers, agg)
        if os.path.exists(os.path.join(a.out, f"{case}.png")):
            md += [f"![{case}]({case}.png)", ""]
    md += cpu_split(summary["cases"])
    md += phase_split(runs)
    fig_text = open(a.figures).read() if a.figures and os.path.exists(a.figures) else ""
    figs = machine_figures(fig_text)
    summary["machine_figures"] = figs
    # A carried T2-zstd is judged against the pure decode measured in its own run (the figures
    # carried with it): the machine's speed differs between runs as much as the ratio's margin.
    t2 = [r for r in runs if r["case"] == "T2-zstd"]
    t2_figs = (t2[0].get("figures") or {}) if t2 and t2[0].get("carried_from") else figs
    tmd, tlist = targets(summary["cases"], figs, t2_figs)
    summary["targets"] = tlist
    md[md.index("<<TARGETS>>")] = "\n".join(tmd)
    # Where the worst kconsume row allocated in its steady-state window (alloc_count.so).
    worst = max((r for r in runs if r.get("alloc_sites_top") and r.get("allocs_per_record") is not None
                 and r["case"] != "SHARE-SLEEP"),  # as in the target (targets())
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


def carry(path, runs):
    """PERF_CARRY=1: the runs of cases this run did not measure come from the report it replaces
    (appended to `runs`, each marked with where it came from and given the machine figures of
    the run that measured it, when known); returns the line that says so, or None when nothing
    was carried."""
    old = json.load(open(path))
    now = {r["case"] for r in runs}
    m = old.get("machine", {})
    src = f"kconsume {m.get('kconsume', '?')}, load average {' '.join(m.get('loadavg_at_start', ['?']))}"
    took = []
    for r in old.get("runs", []):
        if r["case"] in now:
            continue
        # A run carried before keeps the figures it came with (none: unknown); a run measured by
        # the replaced report gets that report's.
        figs = r.get("figures") if r.get("carried_from") else old.get("machine_figures")
        r = dict(r, carried_from=r.get("carried_from", src), figures=figs)
        runs.append(r)
        if r["case"] not in took:
            took.append(r["case"])
    if not took:
        return None
    return (f"**Carried over from the report this one replaced (PERF_CARRY=1), not measured in this run: "
            f"{', '.join(took)} ({src}; each run's `carried_from` in latest.json says where it came "
            "from). The header above describes this run's cases only.**")


def machine_figures(text):
    """The physical limits bench_decode measured (one core): CRC32C, memcpy, codec decode."""
    f = {}
    for key, rx in (("crc32c_gb_s", r"crc32c sse4\.2 x3\s+([\d.]+) GB/s"),
                    ("crc32c_table_gb_s", r"crc32c table\s+([\d.]+) GB/s"),
                    ("memcpy_cache_gb_s", r"memcpy\s+1 MiB\s+([\d.]+) GB/s"),
                    ("memcpy_mem_gb_s", r"memcpy\s+64 MiB\s+([\d.]+) GB/s"),
                    ("zstd_decode_mb_s", r"decode zstd\s+([\d.]+) MB/s"),
                    ("zstd_pure_mb_s", r"zstd pure\s+([\d.]+) MB/s"),
                    ("lz4_decode_mb_s", r"decode lz4\s+([\d.]+) MB/s"),
                    ("gzip_decode_mb_s", r"decode gzip\s+([\d.]+) MB/s"),
                    ("records_iter_m_s", r"records 100B iter only\s+([\d.]+) M records/s")):
        m = re.search(rx, text)
        if m:
            f[key] = float(m.group(1))
    return f


SPLIT = ["cpu_net_s_per_mrec", "cpu_workers_s_per_mrec", "cpu_main_s_per_mrec", "cpu_other_s_per_mrec"]


def peer_version(consumer, machine):
    """The version a row measured, for peers whose output does not say it."""
    if consumer.startswith("java"):
        return machine.get("kafka_clients")
    if consumer.startswith("franz-go"):
        return machine.get("franz-go")
    return None


def predict(net, workers, n):
    """records/s at n workers from per-thread CPU per record (s per million records): the
    network thread is one thread whatever n, the workers' total work divides over n."""
    bound = max(net, workers / n)
    return 1e6 / bound if bound > 0 else None


# Phases of kconsume's CPU, from perf record's samples by (thread, object, symbol). The first
# rule that matches a sample names its phase; the rules follow the data path.
PHASES = [
    ("recv copy", lambda t, d, s: d == "[kernel.kallsyms]" and re.search(
        r"copy_to_iter|copy_user|copyout|datagram_iter|rep_movs|copy_page_to_iter", s)),
    ("kernel other", lambda t, d, s: d == "[kernel.kallsyms]"),
    ("CRC", lambda t, d, s: re.search(r"crc32c|^hw\d_|^sw_crc|^build_shift|^kc_crc", s)),
    ("decompress", lambda t, d, s: re.search(r"zstd|lz4|libz\.|snappy", d)
        or re.search(r"^ZSTD|^HUF_|^FSE_|^LZ4|inflate|^kc_codec|^kc_decomp|^kc_snappy", s)),
    ("record iteration", lambda t, d, s: t.startswith("kc-worker")
        and re.search(r"^kc_record|^kc_records_|^next_record|^kc_batch|varint", s)),
    ("callback", lambda t, d, s: d.startswith("kc_consume") and re.search(r"^on_records$|^on_share", s)),
    ("frame parse, fetch session, engine (network thread)", lambda t, d, s: t == "kc-net" and d.startswith("kc_consume")),
    ("dispatch (workers)", lambda t, d, s: t.startswith("kc-worker") and d.startswith("kc_consume")),
    ("libc (memcpy, malloc)", lambda t, d, s: re.match(r"libc[.-]", d)),
    ("other", lambda t, d, s: True),
]


def cmd_phases(a):
    """One profiled kc_consume run: `perf report --sort comm,dso,sym -t '|'` output split into
    PHASES and threads, with the run's CPU per record (its own per-thread figures)."""
    res = last_json(open(a.out).read()) if os.path.exists(a.out) else None
    row = {"case": "profile-" + a.case, "consumer": a.consumer, "run": 1}
    phases, threads, samples, kernel = {}, {}, 0.0, False
    for line in open(a.report, errors="replace"):
        f = [x.strip() for x in line.split("|")]
        if len(f) != 4 or not f[0].endswith("%"):
            continue
        pct, comm, dso, sym = float(f[0].rstrip("%")), f[1], f[2], re.sub(r"^\[.\]\s*", "", f[3])
        kernel = kernel or dso == "[kernel.kallsyms]"
        name = next(n for n, rule in PHASES if rule(comm, dso, sym))
        phases[name] = phases.get(name, 0.0) + pct
        threads[comm] = threads.get(comm, 0.0) + pct
        samples += pct
    if not res or not samples or not res.get("records"):
        row["error"] = "no profile (perf record or the run failed; see the work dir)"
        print(json.dumps(row))
        return
    cpu = sum(res.get(k, 0) for k in ("cpu_main_s", "cpu_net_s", "cpu_workers_s", "cpu_other_s"))
    row.update(records=res["records"], cpu_s_per_mrec=round(cpu / (res["records"] / 1e6), 4),
               phases={k: round(v * 100 / samples, 2) for k, v in phases.items()},
               threads={k: round(v * 100 / samples, 2) for k, v in threads.items()})
    if not kernel:
        row["note"] = "no kernel samples (perf_event_paranoid)"
    print(json.dumps(row))


def phase_split(runs):
    """The profiled runs' phases: % of the process's samples and CPU s per million records."""
    rows = [r for r in runs if r["case"].startswith("profile-")]
    if not rows:
        return []
    names = [n for n, _ in PHASES]
    md = ["## Where kconsume's CPU goes, by phase", "",
          "One extra run per case of kconsume-assign-w1-io_uring under `perf record` (perf/run: "
          "`profile_run`); each sample is given the first phase of perf/report.py's PHASES whose "
          "rule matches its thread, object and symbol. Cells: share of the process's samples, and "
          "that share of the run's CPU s per million records. Threads: kc-net is the network "
          "thread, kc-worker-N the workers. A row with no kernel samples (perf_event_paranoid "
          "above 1 without root) has no recv copy or kernel figures: they are counted nowhere.", "",
          "| case | CPU s / M rec | " + " | ".join(names) + " | by thread |",
          "|---" * (len(names) + 3) + "|"]
    for r in rows:
        if "error" in r:
            md.append(f"| {r['case'][8:]} | n/a | " + " | ".join("" for _ in names) + f" | {r['error']} |")
            continue
        cpu = r["cpu_s_per_mrec"]
        cells = [f"{r['phases'][n]:.1f} % ({r['phases'][n] / 100 * cpu:.4f})" if r["phases"].get(n) else "—"
                 for n in names]
        th = ", ".join(f"{k} {v:.1f} %" for k, v in sorted(r["threads"].items(), key=lambda t: -t[1]))
        if r.get("note"):
            th += f"; {r['note']}"
        md.append(f"| {r['case'][8:]} | {cpu:.3f} | " + " | ".join(cells) + f" | {th} |")
    return md + [""]


# MEM-IO: each way of receiving, and the one it would replace (perf/run io_variants).
IO_BASE = {"kconsume-assign-w1-io_uring.single-coop": "kconsume-assign-w1-io_uring",
           "kconsume-assign-w1-io_uring.coop": "kconsume-assign-w1-io_uring",
           "kconsume-assign-w1-io_uring.plain": "kconsume-assign-w1-io_uring",
           "kconsume-assign-w1-epoll": "kconsume-assign-w1-io_uring",
           "raw-fetch-uring": "raw-fetch",
           "raw-fetch-fixedfile": "raw-fetch-uring",
           "raw-fetch-multishot": "raw-fetch-uring",
           "raw-fetch-fixedbuf": "raw-fetch-uring"}
IO_MIN_ROUNDS = 5  # fewer cannot say much: 3 rounds all on one side happen 2 times in 8 by chance


def io_variants_md(agg, rows):
    """MEM-IO's verdicts. Runs are paired by round (perf/run alternates the consumers within a
    round, so a round's load falls on both): a variant wins (or loses) only when it used less
    (or more) CPU per record than its base in every one of at least IO_MIN_ROUNDS rounds, a sign
    test (n rounds all on one side: 2 in 2^n under no difference). Medians alone would call this
    machine's noise a win. kconsume's rows are judged on the network thread's CPU (schedstat:
    the ring is that thread's, and the workers' share does not change with it), raw_fetch's on
    the process's task-clock (perf stat, 10 us; /usr/bin/time's 10 ms steps where perf could not
    count, marked). Records/s get the same rule, separately: a pattern can finish sooner for the
    same CPU."""
    fmt = lambda v, f: f.format(v) if v is not None else "—"
    by_run = lambda c, k: {r["run"]: r[k] for r in rows if r["consumer"] == c and "error" not in r
                           and isinstance(r.get(k), (int, float))}
    chances = []  # the chance of each verdict given, under no difference

    def paired(v, b, k, less, more):
        rv, rb = by_run(v, k), by_run(b, k)
        ratios = [rv[i] / rb[i] for i in rv if i in rb and rb[i]]
        n = len(ratios)
        if n < IO_MIN_ROUNDS:
            return (statistics.median(ratios) if ratios else None), f"n/a ({n} round{'s' if n != 1 else ''})"
        chances.append(2 / 2 ** n)
        side = less if max(ratios) < 1 else more if min(ratios) > 1 else None
        return statistics.median(ratios), f"{side} ({n} of {n})" if side else "same"

    out = []
    for v, b in IO_BASE.items():
        if v not in agg or b not in agg:
            continue
        k, note = "cpu_net_s_per_mrec", ""
        if not v.startswith("kconsume"):
            k = "task_clock_s_per_mrec"
            if not (by_run(v, k) and by_run(b, k)):
                k, note = "cpu_s_per_mrec", " (time)"
        ratio, cpu_verdict = paired(v, b, k, "wins", "loses")
        _, rate_verdict = paired(v, b, "rec_s", "slower", "faster")
        col = lambda c, key: med([r for r in rows if r["consumer"] == c and "error" not in r], key)
        out.append(f"| {v} | {b} | {fmt(col(v, k), '{:.4f}')}{note} | {fmt(col(b, k), '{:.4f}')} | "
                   f"{fmt(ratio, '{:.2f}')} | {cpu_verdict} | {fmt(col(v, 'rec_s'), '{:,.0f}')} | "
                   f"{fmt(col(b, 'rec_s'), '{:,.0f}')} | {rate_verdict} | "
                   f"{fmt(col(v, 'syscalls_per_mrec'), '{:,.0f}')} | {fmt(col(b, 'syscalls_per_mrec'), '{:,.0f}')} |")
    expected = sum(chances)
    md = ["Each variant against the pattern it would replace (kconsume's ring setups and epoll "
          "against its SINGLE_ISSUER|DEFER_TASKRUN ring; raw_fetch's io_uring patterns against its "
          "recv(MSG_WAITALL) into place, the pattern kconsume's network thread uses). CPU is the "
          "network thread's for kconsume and the process's task-clock for raw_fetch (\"(time)\": "
          "/usr/bin/time's, where perf could not count); the ratio is the median of the rounds' "
          "variant ÷ base. A verdict other than \"same\" means the variant was on that side of its "
          f"base in every round (at least {IO_MIN_ROUNDS}). Under no difference at all, "
          f"{expected:.1f} of this table's {len(chances)} verdicts would come out other than "
          "\"same\" by chance: a verdict is a place to look, for a longer A/B to confirm.", "",
          "| variant | base | CPU s / M rec | base | CPU ratio | CPU verdict | records/s | base | "
          "records/s verdict | syscalls / M rec | base |", "|---" * 11 + "|"]
    return md + out + [""]


def cpu_split(cases):
    """Each kconsume row's CPU by thread (kc_consume reads /proc/self/task before closing) and
    the records/s it predicts at N workers, beside the 2-worker row measured on this machine."""
    md = ["## Where kconsume's CPU goes (per thread) and the scaling it predicts", "",
          "CPU s per million records by thread (network thread, all workers together, the "
          "program's main thread, the library's other threads), medians. Predicted records/s at N "
          "workers = 1 / max(network CPU/record, worker CPU/record ÷ N), from each 1-worker row; "
          "the measured column is the same mode and backend with 2 workers (this machine's "
          "cores are shared with the broker and the producer, so the measured figure includes "
          "start-up, group join and the broker's CPU: it is the floor, the prediction the "
          "client's own ceiling).", "",
          "| case | consumer | net | workers | main | other | predicted N=1 | N=2 | N=4 | N=8 | N=14 "
          "| measured 2 workers |", "|---" * 12 + "|"]
    rows = 0
    for case, v in cases.items():
        if not isinstance(v, dict) or case == "MEM-IO":  # its rows are ring setups, in its own table
            continue
        for c, x in v.items():
            if not c.startswith("kconsume") or x.get("cpu_net_s_per_mrec") is None:
                continue
            net, wk = x["cpu_net_s_per_mrec"], x["cpu_workers_s_per_mrec"]
            cells = [f"{x[k]:.4f}" if x.get(k) is not None else "n/a" for k in SPLIT]
            if "-w1-" in c:
                pred = [predict(net, wk, n) for n in (1, 2, 4, 8, 14)]
                pcells = [f"{p:,.0f}" if p else "n/a" for p in pred]
                w2 = v.get(c.replace("-w1-", "-w2-"), {}).get("rec_s")
                meas = f"{w2:,.0f} (predicted {pcells[1]})" if w2 else "n/a"
            else:
                pcells, meas = ["—"] * 5, f"{x['rec_s']:,.0f} (this row)" if x.get("rec_s") else "n/a"
            md.append(f"| {case} | {c} | " + " | ".join(cells) + " | " + " | ".join(pcells) + f" | {meas} |")
            rows += 1
    if not rows:
        md.append("| n/a | no kconsume row with a per-thread split | | | | | | | | | | |")
    return md + [""]


def targets(cases, figs, t2_figs):
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

    # The current peers' targets (librdkafka 2.16, Confluent Rust 1.0, franz-go, Java 4.4).
    for peer, bound in (("librdkafka-group", 0.1), ("librdkafka-assign", 0.1), ("rust-group", 0.1),
                        ("franz-go-group", 0.25), ("franz-go-direct", 0.25), ("java-group", 0.1)):
        ratio_target("T1", peer, bound, "T1 CPU/rec")
    t1 = cases.get("T1", {}) if isinstance(cases.get("T1"), dict) else {}
    peers_rss = [(c, x["maxrss_mib"]) for c, x in t1.items() if not c.startswith("kconsume")
                 and "-deb-" not in c and x.get("maxrss_mib")]
    for kc in ("kconsume-group-w1-io_uring", "kconsume-assign-w1-io_uring"):
        k = t1.get(kc, {}).get("maxrss_mib")
        if k is None or not peers_rss:
            add(f"T1 peak RSS: {kc} ÷ the leanest peer's", None, "≤ 1.0", None, "a row is missing")
            continue
        c, lean = min(peers_rss, key=lambda t: t[1])
        r = k / lean
        add(f"T1 peak RSS: {kc} ÷ the leanest peer's", f"{r:.2f} ({k:.0f} vs {lean:.0f} MiB, {c})",
            "≤ 1.0", r <= 1.0, "" if r <= 1.0 else f"gap {r:.2f}× the bound")
    # T2-zstd against the machine's own zstd decode: CPU per record the pure decode of the same
    # documents would take (bench_decode's "zstd pure" figure: ZSTD_decompress alone, MB/s of
    # decompressed values) ÷ kconsume's CPU per record on T2-zstd.
    t2 = cases.get("T2-zstd", {}) if isinstance(cases.get("T2-zstd"), dict) else {}
    pure = t2_figs.get("zstd_pure_mb_s")
    for kc in ("kconsume-assign-w1-io_uring", "kconsume-group-w1-io_uring"):
        x = t2.get(kc, {})
        a, mb_s, rec_s = x.get("cpu_s_per_mrec"), x.get("mb_s"), x.get("rec_s")
        what = f"T2-zstd CPU/rec: {kc} ÷ pure zstd decode of the same bytes"
        if a is None or not pure or not mb_s or not rec_s:
            add(what, None, "≤ 1.3", None, "a row is missing, or bench_decode's zstd pure figure of "
                "the run that measured it")
            continue
        # value bytes per record from the row itself (MB/s ÷ records/s), decoded at `pure` MB/s
        b = (mb_s / rec_s) * 1e6 / (pure * 1e6) * 1e6  # CPU s per million records
        r = a / b
        add(what, f"{r:.2f} ({a:.3f} vs {b:.3f} CPU s/M rec)", "≤ 1.3", r <= 1.3,
            "" if r <= 1.3 else f"gap {r / 1.3:.2f}× the bound")
    # MEM-T1 against the loopback limit: raw_fetch asks for the same responses and only recv()s
    # them (perf/raw_fetch.c); kconsume's records/s over its records/s, both from the first
    # record in hand (steady_rec_s: raw_fetch's clock starts at its first Fetch, kconsume's before
    # its offset lookups or group join). The whole-clock ratio is in the note.
    raw, raw_all = get("MEM-T1", "raw-fetch", "steady_rec_s"), get("MEM-T1", "raw-fetch", "rec_s")
    for kc in ("kconsume-assign-w1-io_uring", "kconsume-group-w1-io_uring"):
        a, a_all = get("MEM-T1", kc, "steady_rec_s"), get("MEM-T1", kc, "rec_s")
        what = (f"MEM-T1 records/s from the first record: {kc} ÷ a raw loopback reader of the same "
                "response bytes")
        if a is None or raw is None:
            add(what, None, "≥ 0.8", None, "a row is missing (raw-fetch or kconsume), or its first_s")
            continue
        r = a / raw
        note = (f"whole clock {a_all / raw_all:.2f} ({a_all:,.0f} vs {raw_all:,.0f}; kconsume's with "
                f"its start, {get('MEM-T1', kc, 'first_s'):.3f} s to the first record)"
                if a_all and raw_all and get("MEM-T1", kc, "first_s") is not None else "")
        if r < 0.8:
            note = f"gap {0.8 / r:.2f}× the bound; " + note
        add(what, f"{r:.2f} ({a:,.0f} vs {raw:,.0f} records/s)", "≥ 0.8", r >= 0.8, note)
    # T4: idle after catching up on 10,000 partitions.
    t4 = cases.get("T4", {}) if isinstance(cases.get("T4"), dict) else {}

    def t4_ratio(label, key, kc, peer, bound, fmt):
        a, b = t4.get(kc, {}).get(key), t4.get(peer, {}).get(key)
        what = f"T4 {label}: {kc} ÷ {peer}"
        if a is None or b is None:
            add(what, None, f"≤ {bound}", None, "a row is missing")
        elif b <= 0:
            add(what, f"{fmt.format(a)} vs {fmt.format(b)}", f"≤ {bound}", None, "the peer's figure is 0")
        else:
            r = a / b
            add(what, f"{r:.3f} ({fmt.format(a)} vs {fmt.format(b)})", f"≤ {bound}", r <= bound,
                "" if r <= bound else f"gap {r / bound:.2f}× the bound")

    for kc, peer in (("kconsume-group-w1-io_uring", "librdkafka-group"),
                     ("kconsume-assign-w1-io_uring", "librdkafka-assign"),
                     ("kconsume-group-w1-io_uring", "rust-group")):
        t4_ratio("idle CPU %", "idle_cpu_pct", kc, peer, 0.1, "{:.3f} %")
    t4_peers = [(c, x["maxrss_mib"]) for c, x in t4.items() if not c.startswith("kconsume")
                and x.get("maxrss_mib")]
    for kc in ("kconsume-group-w1-io_uring", "kconsume-assign-w1-io_uring"):
        k = t4.get(kc, {}).get("maxrss_mib")
        if k is None or not t4_peers:
            add(f"T4 peak RSS: {kc} ÷ the smallest peer's", None, "≤ 0.5", None, "a row is missing")
        else:
            c, small = min(t4_peers, key=lambda t: t[1])
            r = k / small
            add(f"T4 peak RSS: {kc} ÷ the smallest peer's", f"{r:.2f} ({k:.0f} vs {small:.0f} MiB, {c})",
                "≤ 0.5", r <= 0.5, "" if r <= 0.5 else f"gap {r / 0.5:.2f}× the bound")
        last = t4.get(kc, {}).get("fetch_request_bytes_last")
        add(f"T4 {kc}: steady-state Fetch request bytes", None if last is None else f"{last:,.0f} B",
            "≤ 200", None if last is None else last <= 200,
            "a row is missing" if last is None else "" if last <= 200 else f"gap {last - 200:,.0f} B")
    for kc, peer in (("kconsume-group-w1-io_uring", "librdkafka-group"),
                     ("kconsume-assign-w1-io_uring", "librdkafka-assign")):
        t4_ratio("time to a record of every partition", "first_all_s", kc, peer, 0.5, "{:.2f} s")
    # The earlier targets (against librdkafka 2.0.2-era bounds), kept as rows.
    for peer, bound in (("librdkafka-group", 0.3), ("librdkafka-assign", 0.3),
                        ("franz-go-group", 0.5), ("franz-go-direct", 0.5), ("java-group", 0.5)):
        ratio_target("T1", peer, bound, "T1 CPU/rec (earlier bound)")
    w1 = get("MEM-T2-zstd", "kconsume-assign-w1-io_uring", "rec_s")
    w2 = get("MEM-T2-zstd", "kconsume-assign-w2-io_uring", "rec_s")
    if w1 and w2:
        add("MEM-T2-zstd records/s, 2 workers ÷ 1 worker", f"{w2 / w1:.2f} ({w2:,.0f} vs {w1:,.0f})",
            "≥ 1.5", w2 / w1 >= 1.5)
    else:
        add("MEM-T2-zstd records/s, 2 workers ÷ 1 worker", None, "≥ 1.5", None, "a row is missing")
    for peer in ("librdkafka-group", "librdkafka-assign"):
        ratio_target("T2-zstd", peer, 0.7, "T2-zstd CPU/rec (earlier bound)")
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
    # SHARE-SLEEP is left out: its callbacks sleep, so the per-second allocations (stats, heartbeats,
    # request rounds) spread over a thousand times fewer records than a throughput case's.
    # T4 too: 20 records per partition, and each partition's batch ring takes its first segment when
    # its first batch comes (runtime/ring.c: quiet partitions hold none), so there the count is
    # about one per partition, which its own row shows, not a cost per record.
    allocs = [(c, case, x.get("allocs_per_record")) for case, v in cases.items() if isinstance(v, dict)
              and case not in ("SHARE-SLEEP", "T4")
              for c, x in v.items() if c.startswith("kconsume") and x.get("allocs_per_record") is not None]
    if allocs:
        c, case, worst = max(allocs, key=lambda t: t[2])
        add("heap allocations per record (worst kconsume row)", f"{worst:.6f} ({case} {c})", "≤ 0.001",
            worst <= 0.001)
    else:
        add("heap allocations per record", None, "≤ 0.001", None, "no counts (alloc_count.so missing?)")
    t4_allocs = [(c, x.get("allocs_per_record")) for c, x in cases.get("T4", {}).items()
                 if c.startswith("kconsume") and x.get("allocs_per_record") is not None] \
        if isinstance(cases.get("T4"), dict) else []
    if t4_allocs:
        c, worst = max(t4_allocs, key=lambda t: t[1])
        add("T4 heap allocations per record (worst kconsume row; a partition's first batch grows its ring)",
            f"{worst:.6f} ({c})", "none: one per partition at most", None)
    rss = [(c, x.get("maxrss_mib")) for c, x in cases.get("T3", {}).items()
           if c.startswith("kconsume") and x.get("maxrss_mib")] if isinstance(cases.get("T3"), dict) else []
    if rss:
        c, worst = max(rss, key=lambda t: t[1])
        add("T3 peak RSS (worst kconsume row)", f"{worst:.0f} MiB ({c})",
            f"≤ queued.max.bytes ({QUEUED_MAX_MIB} MiB) + 32 MiB", worst <= QUEUED_MAX_MIB + 32)
    else:
        add("T3 peak RSS", None, f"≤ {QUEUED_MAX_MIB + 32} MiB", None, "no T3 kconsume rows")
    # The memory contract (queued.max.bytes) holds for every topic, not only T3's small records: compressed
    # topics are where frames held per response once exceeded the cap (perf/README.md).
    rss_all = [(c, case, x.get("maxrss_mib")) for case, v in cases.items() if isinstance(v, dict)
               for c, x in v.items() if c.startswith("kconsume") and x.get("maxrss_mib")]
    if rss_all:
        c, case, worst = max(rss_all, key=lambda t: t[2])
        add("peak RSS, every case (worst kconsume row)", f"{worst:.0f} MiB ({case} {c})",
            f"≤ queued.max.bytes ({QUEUED_MAX_MIB} MiB) + 32 MiB", worst <= QUEUED_MAX_MIB + 32)
    # Share groups: CPU per record against Java's KafkaShareConsumer, and parallelism beyond the
    # partition count (SHARE-SLEEP: 1 ms per record, 2 partitions, 8 workers each).
    for case in ("SHARE-T1", "SHARE-T2-zstd"):
        ratio_target(case, "java-share", 0.5, f"{case} CPU/rec")
    sh = get("SHARE-SLEEP", "kconsume-share-w8-io_uring", "rec_s")
    gr = get("SHARE-SLEEP", "kconsume-group-w8-io_uring", "rec_s")
    what = "SHARE-SLEEP records/s (1 ms per record, 2 partitions, 8 workers): share group ÷ consumer group"
    if sh and gr:
        add(what, f"{sh / gr:.2f} ({sh:,.0f} vs {gr:,.0f})", "≥ 3", sh / gr >= 3,
            "" if sh / gr >= 3 else "a share partition's records still run one callback at a time")
    else:
        add(what, None, "≥ 3", None, "a row is missing")
    lat = latency_cells(cases.get("latency")) if isinstance(cases.get("latency"), list) else []
    for settings in ("low", "default"):
        for rate in sorted({int(r.get("rate", 0)) for r in lat if r.get("settings") == settings}):
            cell = {r["consumer"]: r for r in lat if r.get("settings") == settings
                    and int(r.get("rate", 0)) == rate and r.get("lat_p99_ms") is not None}
            kr, lr = cell.get("kconsume-w1", {}), cell.get("librdkafka-assign", {})
            k, l = kr.get("lat_p99_ms"), lr.get("lat_p99_ms")
            n = min(kr.get("runs_ok", 1), lr.get("runs_ok", 1))
            what = f"{k} ms vs {l} ms" if k is not None and l is not None else None
            if what and n > 1:
                what += (f" (medians of {n} runs that succeeded; by run {by_run(kr['p99_by_run'])} vs "
                         f"{by_run(lr['p99_by_run'])})")
            ts = " (consumer side: LogAppendTime)" if kr.get("timestamp") == "LogAppendTime" else ""
            add(f"latency p99 at {rate:,} records/s ({settings} fetch settings){ts}, kconsume (1 worker) vs librdkafka",
                what, "kconsume ≤ librdkafka", None if what is None else k <= l)
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


def cmd_latency(a):
    """One latency cell (perf/run latency_run): a row per consumer and one for the producer."""
    d = a.dir
    read = lambda name: open(os.path.join(d, name), errors="replace").read() \
        if os.path.exists(os.path.join(d, name)) else ""
    base = {"case": "latency", "run": a.run, "rate": a.rate, "settings": a.settings}
    if a.timestamp != "CreateTime":
        base["timestamp"] = a.timestamp
    prod = dict(base, consumer="producer (send->ack)")
    # The last summary line: with --warmup-records, the steady-state one comes after the total.
    pat = r"([\d.]+) records/sec.*?([\d.]+) ms avg latency.*?(\d+) ms 50th.*?(\d+) ms 99th.*?(\d+) ms 99.9th"
    m = next((m for m in (re.search(pat, l) for l in reversed(read("producer.log").splitlines())) if m), None)
    if m:
        prod.update(sent_rec_s=round(float(m.group(1))), lat_p50_ms=float(m.group(3)),
                    lat_p99_ms=float(m.group(4)), lat_p999_ms=float(m.group(5)))
    else:
        prod["error"] = "producer summary not found"
    print(json.dumps(prod))
    notes = dict(kv.split("=", 1) for kv in a.notes.split(";") if "=" in kv)
    for who in sorted(a.consumers.split()):
        row = dict(base, consumer=who)
        res = None
        try:
            res = last_json(read(f"{who}.out"))
        except (ValueError, IndexError):
            pass
        if res:
            row.update({k: res[k] for k in ("records", "version", "lat_records", "lat_p50_ms", "lat_p99_ms", "lat_p999_ms")
                        if k in res})
            if res.get("records") != a.expect:
                row["error"] = f"read {res.get('records')} of {a.expect} records"
        else:
            note = next((v for k, v in notes.items() if who.startswith(k) and v), "")
            tail = " | ".join(read(f"{who}.err").strip().splitlines()[-2:])[-200:]
            row["error"] = note or f"no result (timed out or failed){': ' + tail if tail else ''}"
        t = read(f"{who}.time").split()
        try:
            el, us, sy, rss = float(t[-4]), float(t[-3]), float(t[-2]), int(t[-1])
            row["maxrss_mib"] = round(rss / 1024, 1)
            t0 = float(read(f"{who}.t0").split()[0])
            at, ticks, hz = read(f"{who}.cpu0").split()
            span = t0 + el - float(at)
            if span > 0:
                row["cpu_pct"] = round(100 * (us + sy - float(ticks) / float(hz)) / span, 1)
        except (IndexError, ValueError):
            pass
        print(json.dumps(row))


LAT_FIGURES = ("lat_p50_ms", "lat_p99_ms", "lat_p999_ms", "cpu_pct", "maxrss_mib")


def latency_cells(rows):
    """One row per (settings, rate, consumer): the median of each figure over the runs that
    succeeded, with `runs` (how many ran), `runs_ok` (how many succeeded), `p99_by_run` (in run
    order) and, when some failed, `error` saying which; the other fields from the last run that
    succeeded."""
    groups = {}
    for r in rows:
        groups.setdefault((r.get("settings"), int(r.get("rate", 0)), r["consumer"]), []).append(r)
    out = []
    for key, rs in groups.items():
        rs = sorted(rs, key=lambda r: int(r.get("run", 1)))
        ok = [r for r in rs if "error" not in r]
        cell = {k: v for k, v in (ok or rs)[-1].items()
                if k not in LAT_FIGURES and k not in ("error", "run")}
        cell["runs"], cell["runs_ok"] = len(rs), len(ok)
        for k in LAT_FIGURES + ("sent_rec_s",):
            v = med(ok, k)
            if v is not None:
                cell[k] = round(v) if k == "sent_rec_s" else round(v, 2)
        cell["p99_by_run"] = [r.get("lat_p99_ms") if "error" not in r else None for r in rs]
        if len(ok) < len(rs):
            bad = [r for r in rs if "error" in r]
            cell["error"] = (bad[0]["error"] if len(rs) == 1 else
                             f"{len(bad)} of {len(rs)} runs failed (run {bad[0].get('run', 1)}: "
                             f"{bad[0]['error']})")
        out.append(cell)
    return out


def by_run(v):
    return "/".join("–" if x is None else f"{x:g}" for x in v)


def latency_md(rows):
    """The latency matrix: one table, and the kconsume row's place among the peers."""
    rows = latency_cells(rows)
    append = any(r.get("timestamp") == "LogAppendTime" for r in rows)
    md = ["## latency", "",
          ("Consumer-side latency (poll or callback time − the broker's LogAppendTime: "
           "PERF_LAT_TIMESTAMP=LogAppendTime, the producer's share left out)" if append else
           "End-to-end latency (poll or callback time − the producer's CreateTime)") +
          ", 12 partitions, 100 B records, every consumer reading the same stream at once; each "
          "figure the median over the cell's runs that succeeded (`runs ok`; the p99 of each in the note); CPU % from "
          "the producer's start to the consumer's exit; `low`: fetch.min.bytes 1 and a 10 ms max "
          "wait, `default`: each client's own fetch settings (perf/README.md).", "",
          "| settings | rate (records/s) | consumer | runs ok | records | p50 ms | p99 ms | p99.9 ms | CPU % | peak RSS MiB | note |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {"low": 0, "default": 1}
    for r in sorted(rows, key=lambda r: (order.get(r.get("settings"), 2), int(r.get("rate", 0)),
                                         r["consumer"].startswith("producer"), r["consumer"])):
        note = r.get("error", r.get("note", ""))
        if r["consumer"].startswith("producer") and r.get("sent_rec_s"):
            note = f"sent at {r['sent_rec_s']:,} records/s"
        if r.get("runs", 1) > 1:
            note = f"p99 by run {by_run(r.get('p99_by_run', []))}" + (f"; {note}" if note else "")
        f = lambda k: "" if r.get(k) is None else r[k]
        md.append(f"| {f('settings')} | {int(r.get('rate', 0)):,} | {r['consumer']} | {r.get('runs_ok', 1)}/{r.get('runs', 1)} | {f('records')} | "
                  f"{f('lat_p50_ms')} | {f('lat_p99_ms')} | {f('lat_p999_ms')} | {f('cpu_pct')} | "
                  f"{f('maxrss_mib')} | {note} |")
    return md + [""]


def gnuplot(script, dat, what):
    """Runs a chart's gnuplot script (a missing gnuplot is reported, not fatal), then removes its
    data file."""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"report: chart {what}: {e}", file=sys.stderr)
    finally:
        os.unlink(dat)


def latency_chart(out, rows):
    """p99 latency and CPU % against the rate, one line per consumer, per settings (gnuplot)."""
    rows = latency_cells(rows)
    cons = sorted({r["consumer"] for r in rows if not r["consumer"].startswith("producer")})
    sets = [s for s in ("low", "default") if any(r.get("settings") == s for r in rows)]
    if not cons or not sets:
        return
    dat = os.path.join(out, ".latency.dat")
    plots = []
    with open(dat, "w") as f:
        blocks = 0
        for s in sets:
            for c in cons:
                pts = sorted((int(r["rate"]), r.get("lat_p99_ms"), r.get("cpu_pct")) for r in rows
                             if r.get("settings") == s and r["consumer"] == c
                             and r.get("lat_p99_ms") is not None)
                f.write(f"# {s} {c}\n")
                for rate, p99, cpu in pts:
                    f.write(f"{rate} {p99 if p99 is not None else 'NaN'} {cpu if cpu is not None else 'NaN'}\n")
                f.write("\n\n")
                plots.append((s, c, blocks))
                blocks += 1
    panels = []
    for s in sets:
        for col, title in ((2, f"p99 ms, {s} fetch settings (log)"), (3, f"CPU %, {s} fetch settings")):
            lines = ", ".join(f"'{dat}' index {b} using 1:{col} with linespoints title '{c}'"
                              for ss, c, b in plots if ss == s)
            panels.append(f"set title '{title}'\n{'set logscale y' if col == 2 else 'unset logscale y'}\n"
                          f"plot {lines}")
    script = f"""set terminal pngcairo size 1100,{420 * len(sets)} noenhanced
set output '{os.path.join(out, 'latency.png')}'
set multiplot layout {len(sets)},2 title 'latency under load (records/s, log scale)'
set logscale x
set key left top font ',8'
set xlabel 'records/s'
""" + "\n".join(panels) + "\nunset multiplot\n"
    gnuplot(script, dat, "latency")


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
    gnuplot(script, dat, case)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    for k in ("case", "consumer", "dir"):
        r.add_argument("--" + k, required=True)
    for k in ("run", "expect", "rc"):
        r.add_argument("--" + k, type=int, required=True)
    ph = sub.add_parser("phases")
    for k in ("case", "consumer", "out", "report"):
        ph.add_argument("--" + k, required=True)
    s = sub.add_parser("report")
    for k in ("runs", "machine", "scale", "elapsed", "out"):
        s.add_argument("--" + k, required=True)
    s.add_argument("--figures", help="bench_decode output to quote, if any")
    s.add_argument("--quick", default="0")
    s.add_argument("--carry", help="PERF_CARRY: an earlier latest.json whose other cases to keep")
    lt = sub.add_parser("latency")
    for k in ("dir", "settings", "consumers", "notes"):
        lt.add_argument("--" + k, required=True)
    for k in ("rate", "expect"):
        lt.add_argument("--" + k, type=int, required=True)
    lt.add_argument("--run", type=int, default=1)
    lt.add_argument("--timestamp", default="CreateTime", choices=("CreateTime", "LogAppendTime"))
    a = p.parse_args()
    {"record": cmd_record, "report": cmd_report, "phases": cmd_phases, "latency": cmd_latency}[a.cmd](a)


if __name__ == "__main__":
    main()
