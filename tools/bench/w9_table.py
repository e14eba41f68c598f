#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""w9_table.py RUN.out: the W9 tables of docs/PERFORMANCE.md from the
RESULT lines of `distlock-bench --repeat N W9` (and W9L; stdin or files):
for each curve and step, the median of the repetitions and their range.

    distlock-bench --repeat 3 --svg-dir docs W9 > w9.out
    distlock-bench W9L > w9l.out
    tools/bench/w9_table.py w9.out w9l.out
"""
import re
import statistics
import sys

FIELDS = [  # (column, key, format)
    ("ops/s", "ops_per_s", "{:.0f}"),
    ("fairness", "fairness", "{:.2f}"),
    ("wait p99 ms", "p99_us", "ms"),
    ("wait max ms", "wait_max_us", "ms"),
    ("Redis µs/op", "redis_cpu_us_per_op", "{:.0f}"),
    ("client µs/op", "client_cpu_us_per_op", "{:.0f}"),
    ("run queue µs/op", "runq_wait_us_per_op", "{:.0f}"),
    ("Redis cmds/op", "redis_cmds_per_op", "{:.1f}"),
    ("conns/proc", "conns_per_proc", "{:.1f}"),
    ("RSS kB", "rss_kb_mean", "{:.0f}"),
]


def parse(lines):
    rows = []
    for line in lines:
        m = re.match(r"RESULT peer=(\S+) workload=(\S+) ops_per_s=(\S+) p50_us=(\S+) "
                     r"p99_us=(\S+) extra=(.*)$", line.strip())
        if not m or not m.group(2).startswith("W9"):
            continue
        d = {"peer": m.group(1), "wl": m.group(2)}
        for k, v in zip(("ops_per_s", "p50_us", "p99_us"), m.group(3, 4, 5)):
            try:
                d[k] = float(v)
            except ValueError:
                pass
        for kv in m.group(6).split(","):
            if "=" in kv:
                k, v = kv.split("=", 1)
                try:
                    d[k] = float(v)
                except ValueError:
                    d[k] = v
        rows.append(d)
    return rows


def cell(vals, fmt):
    if not vals:
        return ""
    def f(v):
        if fmt == "ms":
            v = v / 1000
            return "{:.1f}".format(v) if v < 100 else "{:.0f}".format(v)
        return fmt.format(v)
    med = statistics.median_low(vals)
    if len(vals) == 1 or min(vals) == max(vals):
        return f(med)
    return "{} ({}–{})".format(f(med), f(min(vals)), f(max(vals)))


def main():
    rows = []
    for name in sys.argv[1:] or ["-"]:
        rows += parse(sys.stdin if name == "-" else open(name))
    curves = []
    for r in rows:
        key = (r["wl"], r["peer"])
        if "procs" in r and key not in curves:
            curves.append(key)
    for wl, peer in curves:
        print("\n#### {} {}\n".format(wl, peer))
        print("| procs | " + " | ".join(c for c, _, _ in FIELDS) + " |")
        print("|---" * (len(FIELDS) + 1) + "|")
        steps = sorted({r["procs"] for r in rows if (r["wl"], r["peer"]) == (wl, peer)})
        for n in steps:
            sel = [r for r in rows if (r["wl"], r["peer"]) == (wl, peer) and r.get("procs") == n]
            cells = [cell([r[k] for r in sel if isinstance(r.get(k), float)], fmt)
                     for _, k, fmt in FIELDS]
            print("| {:.0f} | ".format(n) + " | ".join(cells) + " |")
    many = [r for r in rows if r["wl"] == "W9L"]
    if many:
        print("\n#### W9L\n")
        cols = [("acquire µs/lock", "acquire_us_per_lock", "{:.0f}"),
                ("first tenth", "acquire_us_first10", "{:.0f}"),
                ("last tenth", "acquire_us_last10", "{:.0f}"),
                ("renewal round trips/tick", "renew_round_trips_per_period", "{:.0f}"),
                ("Redis CPU %", "redis_cpu_pct", "{:.1f}"),
                ("lost", "lost", "{:.0f}"),
                ("unlock errors", "unlock_errors", "{:.0f}"),
                ("client B/lock", "rss_bytes_per_lock", "{:.0f}"),
                ("Redis B/lock", "redis_bytes_per_lock", "{:.0f}"),
                ("idle CPU %", "idle_cpu_pct", "{:.2f}"),
                ("wake-ups/s", "wakeups_per_s", "{:.1f}")]
        print("| locks | lease ms | " + " | ".join(c for c, _, _ in cols) + " |")
        print("|---" * (len(cols) + 2) + "|")
        for key in sorted({(r.get("lease_ms", 0), r["locks"]) for r in many if "locks" in r}):
            sel = [r for r in many if (r.get("lease_ms", 0), r.get("locks")) == key]
            print("| {:.0f} | {:.0f} | ".format(key[1], key[0]) + " | ".join(
                cell([r[k] for r in sel if isinstance(r.get(k), float)], f)
                for _, k, f in cols) + " |")
    mem = [r for r in rows if r["wl"] == "W9M"]
    if mem:
        print("\n#### W9M\n")
        keys = ["bytes_per_held_lock", "keys_per_held_lock", "bytes_per_waiter",
                "bytes_per_idle_name", "keys_per_idle_name", "bytes_per_connected_process"]
        print("| peer | " + " | ".join(keys) + " |")
        print("|---" * (len(keys) + 1) + "|")
        for peer in ("distlock", "naive"):
            sel = [r for r in mem if r["peer"] == peer]
            if sel:
                print("| {} | ".format(peer) + " | ".join(
                    cell([r[k] for r in sel if isinstance(r.get(k), float)], "{:.0f}"
                         if not k.startswith("keys") else "{:.2f}") for k in keys) + " |")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:  # | head
        sys.exit(0)
