#!/usr/bin/env python3
"""Turns one `cargo bench -p parkline-benches` run into the Markdown tables of the README.

    CRITERION_HOME=/tmp/parkline-criterion cargo bench -p parkline-benches 2>&1 | tee /tmp/bench.log
    python3 benches/summarize.py /tmp/parkline-criterion /tmp/bench.log

The interleaved ratios alone (no criterion measurement; a filter that matches no benchmark):

    cargo bench -p parkline-benches --bench park --bench boundary -- interleaved-only | tee /tmp/i.log

Every row of the README's performance table in one run, already as Markdown (no criterion):

    nice -n 5 cargo bench -p parkline-benches --bench table

Reads each benchmark's median (criterion's `new/estimates.json`) and the lines the benches print
beside the timings (interleaved medians, fsyncs per park and per boundary, peak memory of
recovery). Ratios compare figures of the same run only; on a shared disk only the interleaved
ones compare the contenders rather than the minutes they ran in.
"""
import json
import os
import re
import sys


def median(home, group, function, param):
    path = os.path.join(home, group, function, str(param), "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["median"]["point_estimate"]  # nanoseconds
    except FileNotFoundError:
        return None


def fmt_time(ns):
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def ratio(a, b):
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def main():
    home, log_paths = sys.argv[1], sys.argv[2:]
    log = "".join(open(p).read() for p in log_paths)
    out = []

    out.append("### Ratios (interleaved rounds: the contenders take turns, one operation each)\n")
    out.append("| durable park, N parked | parkline | floor: write + fsync | parkline / floor "
               "(quartiles) | JSON rewrite / parkline | SQLite WAL FULL / parkline |")
    out.append("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for m in re.finditer(
            r"park interleaved: (\d+) parked, \d+ rounds, medians: parkline ([\d.]+) us, "
            r"floor ([\d.]+) us, json [\d.]+ us, sqlite [\d.]+ us; parkline/floor [\d.]+x, "
            r"json/parkline ([\d.]+)x, sqlite/parkline ([\d.]+)x; per-round parkline/floor "
            r"quartiles ([\d.]+) ([\d.]+) ([\d.]+)", log):
        n, p, f, j, s, q1, q2, q3 = m.groups()
        out.append(f"| {n} | {p} µs | {f} µs | **{q2}x** ({q1}-{q3}) | {j}x | {s}x |")
    out.append("")
    out.append("| boundary, lines | fsyncs per boundary | parkline | per line | floor: 2 x (write + fsync) "
               "| parkline / floor (quartiles) | SQLite WAL FULL / parkline | today's JSON pop-front / parkline |")
    out.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    fsyncs = dict(re.findall(r"boundary fsyncs: (\d+) lines: (\d+) fsyncs", log))
    for n, p, per, f, r, q1, q3, rest in re.findall(
            r"boundary interleaved: (\d+) lines, \d+ rounds, medians: parkline ([\d.]+) us "
            r"\(([\d.]+) us per line\), floor ([\d.]+) us; parkline/floor ([\d.]+)x, "
            r"per-round quartiles ([\d.]+) [\d.]+ ([\d.]+)(.*)", log):
        s = re.search(r"sqlite [\d.]+ us \(([\d.]+)x parkline", rest)
        j = re.search(r"json pop-front [\d.]+ us \(([\d.]+)x parkline", rest)
        out.append(f"| {n} | **{fsyncs.get(n, '-')}** | {p} µs | {per} µs | {f} µs | **{r}x** ({q1}-{q3}) "
                   f"| {s.group(1) + 'x' if s else '-'} | {j.group(1) + 'x' if j else '-'} |")

    out.append("\n### Durable park (criterion median per park, sequential; N lines already parked)\n")
    out.append("| N | parkline | floor: write + fsync | JSON mirror rewrite | SQLite WAL FULL "
               "| parkline / floor | JSON / parkline | SQLite / parkline |")
    out.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in (0, 1, 13, 100, 1000):
        p, f, j, s = (median(home, "park", k, n) for k in
                      ("parkline", "floor_write_fsync", "json_mirror_rewrite", "sqlite_wal_full"))
        out.append(f"| {n} | {fmt_time(p)} | {fmt_time(f)} | {fmt_time(j)} | {fmt_time(s)} "
                   f"| {ratio(p, f)} | {ratio(j, p)} | {ratio(s, p)} |")
    m = re.search(r"park costs: (.*)", log)
    if m:
        out.append(f"\nPer park: {m.group(1)}.")

    out.append("\n### Boundary: batch, hand-over, settle (criterion median, sequential)\n")
    out.append("| lines | fsyncs per boundary | parkline | per line | floor: 2 x (write + fsync) "
               "| parkline / floor | JSON pop-front (N rewrites) | JSON / parkline |")
    out.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in (1, 10, 100, 1000, 10000):
        p, f, j = (median(home, "boundary", k, n) for k in
                   ("parkline", "floor_two_fsyncs", "json_mirror_pop_front"))
        per = None if p is None else p / n
        out.append(f"| {n} | {fsyncs.get(str(n), '-')} | {fmt_time(p)} | {fmt_time(per)} "
                   f"| {fmt_time(f)} | {ratio(p, f)} | {fmt_time(j)} | {ratio(j, p)} |")

    out.append("\n### Recovery: open after a crash (median; 13 lines in flight)\n")
    out.append("| lines | parkline | JSON mirror load | SQLite load | parkline peak RSS growth "
               "| x line bytes | JSON peak | SQLite peak |")
    out.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    mem = {}
    for kind, n, growth, times in re.findall(
            r"recovery memory: (\S+) (\d+) lines: .*?peak RSS growth ([\d.]+) MiB \(([\d.]+)x", log):
        mem[(kind, n)] = (growth, times)
    for n in (13, 100, 1000, 10000, 100000):
        p, j, s = (median(home, "recovery", k, n) for k in
                   ("parkline", "json_mirror_load", "sqlite_wal_load"))
        pm = mem.get(("parkline", str(n)), ("-", "-"))
        jm = mem.get(("json_mirror_load", str(n)), ("-",))[0]
        sm = mem.get(("sqlite_wal_load", str(n)), ("-",))[0]
        out.append(f"| {n} | {fmt_time(p)} | {fmt_time(j)} | {fmt_time(s)} | {pm[0]} MiB "
                   f"| {pm[1]} | {jm} MiB | {sm} MiB |")

    out.append("\n### Reads (median): since:<cursor> returning 10 turns, n:1, linear scan\n")
    out.append("| history (turns) | since:<cursor>, 10 turns | n:1 | linear scan for the same 10 |")
    out.append("| ---: | ---: | ---: | ---: |")
    for n in (100, 10000, 1000000):
        s, l, scan = (median(home, "read", k, n) for k in
                      ("since_cursor_10_turns", "n1", "linear_scan_since"))
        out.append(f"| {n} | {fmt_time(s)} | {fmt_time(l)} | {fmt_time(scan)} |")

    out.append("\n### Split alone (median per line)\n")
    out.append("| lines | parkline::split per line | counting chars per line | split / count |")
    out.append("| ---: | ---: | ---: | ---: |")
    for n in (13, 1000, 100000):
        s, c = (median(home, "split", k, n) for k in ("parkline_split", "count_chars"))
        out.append(f"| {n} | {fmt_time(None if s is None else s / n)} "
                   f"| {fmt_time(None if c is None else c / n)} | {ratio(s, c)} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
