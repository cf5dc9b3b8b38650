#!/usr/bin/env python3
"""The 100,000-row context as a user meets it (issue 15): whole processes, same run, same file.

Usage: scripts/bench_context.py [PTC_BINARY] [RUNS]
Writes a 6.5 MB JSON file of 100,000 rows ({"id", "cat", "amount", "tags"}), then runs, RUNS
times each and interleaved: `ptc run --in-process` and `ptc run` (sandboxed, default policy) with
`(count data/rows)` and the aggregation, and CPython doing the same (json.load, then the same
computation with dicts) as a whole process. Prints median wall time and peak RSS (ru_maxrss of
the process; for a sandboxed run, of `ptc` itself, the runner's is reported separately by the
kernel to `ptc` and not visible here) and the ratio to CPython.
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


def rows_file(path):
    rows = [{"id": i, "cat": f"c{i % 17}", "amount": (i % 1000) * 0.5 + 0.25,
             "tags": [f"t{i % 5}", "x"]} for i in range(100_000)]
    with open(path, "w") as f:
        json.dump({"rows": rows}, f)


def run_one(argv):
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read().decode()
    p.stderr.close()
    if status != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed: {err[:500]}")
    return wall, usage.ru_maxrss


def main():
    ptc = sys.argv[1] if len(sys.argv) > 1 else "target/release/ptc"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "rows.json")
        rows_file(path)
        cases = {
            "count, ptc --in-process": [ptc, "run", "--in-process", "-e", COUNT, "--context", path],
            "count, ptc (sandboxed)": [ptc, "run", "-e", COUNT, "--context", path],
            "count, CPython json.load": [sys.executable, "-c", PY_COUNT, path],
            "aggregation, ptc --in-process": [ptc, "run", "--in-process", "-e", AGG, "--context", path],
            "aggregation, ptc (sandboxed)": [ptc, "run", "-e", AGG, "--context", path],
            "aggregation, CPython": [sys.executable, "-c", PY_AGG, path],
        }
        samples = {k: [] for k in cases}
        for _ in range(runs):
            for k, argv in cases.items():
                samples[k].append(run_one(argv))
    base = {}
    print(f"file: 6.5 MB, 100,000 rows; {runs} interleaved runs each; medians")
    print("| process | wall | ratio to CPython | peak RSS | ratio |")
    print("|---|---|---|---|---|")
    for k, xs in samples.items():
        wall = statistics.median(x[0] for x in xs)
        rss = statistics.median(x[1] for x in xs)
        kind = k.split(",")[0]
        py = [c for c in cases if c.startswith(kind) and "CPython" in c][0]
        if k == py:
            base[kind] = (wall, rss)
    for k, xs in samples.items():
        wall = statistics.median(x[0] for x in xs)
        rss = statistics.median(x[1] for x in xs)
        bw, br = base[k.split(",")[0]]
        print(f"| {k} | {wall * 1000:.0f} ms | {wall / bw:.2f}× | {rss / 1024:.0f} MiB | {rss / br:.2f}× |")


if __name__ == "__main__":
    main()
