#!/usr/bin/env python3
"""The 100,000-row context as a user meets it (issue 15): whole processes, same run, same file.

Usage: scripts/bench_context.py [PTC_BINARY] [RUNS] [POLICY_FILE]
Writes a 6.5 MB JSON file of 100,000 rows ({"id", "cat", "amount", "tags"}), then runs, RUNS
times each and interleaved: `ptc run --in-process` and `ptc run` (sandboxed, default policy) with
`(count data/rows)` and the aggregation, and CPython doing the same (json.load, then the same
computation with dicts) as a whole process. Prints median wall time, CPU time (user + system
of the process and of every process it started: this script is their subreaper, so a runner
that `ptc` leaves to exit on its own is counted too; on a loaded machine the wall clock mostly
measures the wait for a core) and peak RSS (ru_maxrss: the largest of those processes, so for
a sandboxed run the larger of `ptc` and its runner), each with its ratio to CPython.
POLICY_FILE (optional) is passed to the sandboxed runs as `--policy`, e.g. the default policy
with a longer timeout when the machine is too loaded for its 1 s deadline. PTC_BENCH_ROWS
(environment) changes the number of rows, e.g. 230000 for a file just under the default
policy's 16 MiB `max_context_bytes`.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

COUNT = "(count data/rows)"
AGG = "(->> data/rows (group-by :cat) (map (fn [[k v]] [k (sum-by :amount v)])) (sort-by second >))"
PY_COUNT = "import json,sys; d=json.load(open(sys.argv[1])); print(len(d['rows']))"
PY_AGG = """import json,sys
d=json.load(open(sys.argv[1]))
g={}
for r in d['rows']: g.setdefault(r['cat'],[]).append(r)
print(sorted([(k,sum(r['amount'] for r in v)) for k,v in g.items()], key=lambda kv: kv[1], reverse=True))"""


ROWS = int(os.environ.get("PTC_BENCH_ROWS", "100000"))


GEN = """import json,sys
rows = [{"id": i, "cat": f"c{i % 17}", "amount": (i % 1000) * 0.5 + 0.25,
         "tags": [f"t{i % 5}", "x"]} for i in range(int(sys.argv[2]))]
with open(sys.argv[1], "w") as f:
    json.dump({"rows": rows}, f)"""


def rows_file(path):
    # In a child: the rows built here would stay in this script's RSS, and a child started by
    # vfork reports its parent's peak as its own `ru_maxrss` (Linux records it at the exec).
    subprocess.run([sys.executable, "-c", GEN, path, str(ROWS)], check=True)


def become_subreaper():
    """Orphans of a measured process (a runner its `ptc` did not wait for before exiting) are
    re-parented to this script, which reaps them and so counts their CPU time and peak RSS."""
    import ctypes
    PR_SET_CHILD_SUBREAPER = 36
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed")


def run_one(argv):
    """Wall time, CPU time (user + system of the process and of every process it started, however
    they ended: reaped by it, or orphaned and reaped here) and the largest peak RSS among them."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read().decode()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.stderr.close()
    if status != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed: {err[:500]}")
    cpu, rss = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
    while True:
        try:
            _, _, orphan = os.wait4(-1, 0)
        except ChildProcessError:
            break
        cpu += orphan.ru_utime + orphan.ru_stime
        rss = max(rss, orphan.ru_maxrss)
    return wall, cpu, rss


def main():
    become_subreaper()
    ptc = sys.argv[1] if len(sys.argv) > 1 else "target/release/ptc"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    policy = ["--policy", sys.argv[3]] if len(sys.argv) > 3 else []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "rows.json")
        rows_file(path)
        size = os.path.getsize(path)
        cases = {
            "count, ptc --in-process": [ptc, "run", "--in-process", "-e", COUNT, "--context", path],
            "count, ptc (sandboxed)": [ptc, "run", *policy, "-e", COUNT, "--context", path],
            "count, CPython json.load": [sys.executable, "-c", PY_COUNT, path],
            "aggregation, ptc --in-process": [ptc, "run", "--in-process", "-e", AGG, "--context", path],
            "aggregation, ptc (sandboxed)": [ptc, "run", *policy, "-e", AGG, "--context", path],
            "aggregation, CPython": [sys.executable, "-c", PY_AGG, path],
        }
        samples = {k: [] for k in cases}
        for _ in range(runs):
            for k, argv in cases.items():
                samples[k].append(run_one(argv))
    med = {k: [statistics.median(x[i] for x in xs) for i in range(3)] for k, xs in samples.items()}
    print(f"file: {size / 1e6:.1f} MB, {ROWS:,} rows; {runs} interleaved runs each; medians")
    print("| process | wall | CPU | CPU ratio to CPython | peak RSS | RSS ratio |")
    print("|---|---|---|---|---|---|")
    for k, (wall, cpu, rss) in med.items():
        kind = k.split(",")[0]
        _, pcpu, prss = next(v for c, v in med.items() if c.startswith(kind) and "CPython" in c)
        print(f"| {k} | {wall * 1000:.0f} ms | {cpu * 1000:.0f} ms | {cpu / pcpu:.2f}× "
              f"| {rss / 1024:.0f} MiB | {rss / prss:.2f}× |")


if __name__ == "__main__":
    main()
