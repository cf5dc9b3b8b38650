#!/usr/bin/env python3
"""Peak memory per process for a large context (issue 15): the `ptc` client and its runner apart.

Usage: scripts/bench_context_rss.py [PTC_BINARY] [ROWS]
Writes ROWS (default 100,000) rows of {"id", "cat", "amount", "tags"} as JSON, runs
`ptc run --in-process` and `ptc run` (sandboxed, default policy) with `(count data/rows)`, and
samples every 2 ms the peak RSS (`VmHWM`) of `ptc` and of each `ptc-runner` it spawned (only
after the exec: before it, a posix_spawn child still shares `ptc`'s memory). VmHWM is a
high-water mark, so sampling misses at most the last 2 ms of a process. CPython's `json.load`
of the same file is measured in the same run (`/usr/bin/time`'s maximum RSS). Run as the user
that runs the runners (or root): a runner is not dumpable, so its /proc files are its owner's.
"""
import json
import os
import subprocess
import sys
import tempfile
import time


def rows_file(path, n):
    rows = [{"id": i, "cat": f"c{i % 17}", "amount": (i % 1000) * 0.5 + 0.25,
             "tags": [f"t{i % 5}", "x"]} for i in range(n)]
    with open(path, "w") as f:
        json.dump({"rows": rows}, f)


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def children(pid):
    """Children of every thread of `pid` (the engine spawns runners from a thread of its own)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else []:
        found += [int(x) for x in read(f"/proc/{pid}/task/{task}/children").split()]
    return found


def vm_hwm_kib(pid):
    for line in read(f"/proc/{pid}/status").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


def peaks(argv):
    """Runs `argv`; returns its output and the peak RSS (KiB) of it and of each runner child."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    peak = {}
    while p.poll() is None:
        for pid in [p.pid] + children(p.pid):
            if pid != p.pid and not read(f"/proc/{pid}/comm").startswith("ptc-runner"):
                continue
            kib = vm_hwm_kib(pid)
            if kib:
                name = "ptc" if pid == p.pid else "runner"
                peak[name] = max(peak.get(name, 0), kib)
        time.sleep(0.002)
    return p.stdout.read().decode().strip(), peak


def main():
    ptc = sys.argv[1] if len(sys.argv) > 1 else "target/release/ptc"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "rows.json")
        rows_file(path, n)
        size = os.path.getsize(path)
        cases = {
            "ptc run --in-process": [ptc, "run", "--in-process", "-e", "(count data/rows)",
                                     "--context", path],
            "ptc run (sandboxed)": [ptc, "run", "-e", "(count data/rows)", "--context", path],
        }
        results = {k: peaks(argv) for k, argv in cases.items()}
        py = subprocess.run(
            ["/usr/bin/time", "-f", "%M", sys.executable, "-c",
             "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['rows']))", path],
            capture_output=True, text=True, check=True)
        py_kib = int(py.stderr.split()[-1])
    print(f"file: {size / 1e6:.1f} MB, {n:,} rows; `(count data/rows)`; peak RSS per process")
    print("| process | output | peak RSS | ratio to CPython |")
    print("|---|---|---|---|")
    for case, (out, peak) in results.items():
        for name, kib in peak.items():
            print(f"| {case}: {name} | {out} | {kib / 1024:.0f} MiB | {kib / py_kib:.2f}× |")
    print(f"| CPython json.load | {n} | {py_kib / 1024:.0f} MiB | 1.00× |")


if __name__ == "__main__":
    main()
