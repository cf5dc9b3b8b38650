#!/usr/bin/env python3
"""CPU time per execution of each single-threaded stage of `ptc serve` under its default config.

Starts `ptc serve` (no config file) on a temporary socket, runs `ptc bench --connect` at each
client count, and reads every thread's on-CPU time from /proc/PID/task/TID/schedstat (ns) of the
daemon and of its zygote before and after each round. Prints, per round, p50/p99/throughput from
the bench and the CPU per execution of each thread (daemon threads grouped by name; tokio workers
summed), next to the wall time of one fork+exec of /bin/true measured in the same run.

usage: scripts/stage_cpu.py [--bin target/release] [-n 4000] [--clients 1,2,4,8,16,64]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def threads(pid):
    """{tid: (name, on-CPU ns)} for every thread of `pid`."""
    out = {}
    base = f"/proc/{pid}/task"
    for tid in os.listdir(base):
        try:
            with open(f"{base}/{tid}/comm") as f:
                name = f.read().strip()
            with open(f"{base}/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
        except OSError:
            continue
        out[tid] = (name, ns)
    return out


def children(pid):
    """Children of every thread of `pid` (the zygote is the spawner thread's child)."""
    out = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return out


def zygote_of(pid):
    for c in children(pid):
        try:
            with open(f"/proc/{c}/cmdline", "rb") as f:
                if b"--zygote" in f.read().split(b"\0"):
                    return c
        except OSError:
            pass
    return None


def group(name):
    # tokio's workers are all named alike; blocking-pool threads too.
    return "tokio workers" if name.startswith("tokio-runtime") else name


def delta(before, after):
    """{group: ns} spent between two snapshots (threads that appeared count from zero)."""
    out = {}
    for tid, (name, ns) in after.items():
        spent = ns - before.get(tid, (name, 0))[1]
        out[group(name)] = out.get(group(name), 0) + spent
    return out


def fork_exec_us(runs=2000):
    """Mean wall µs of one fork+exec+wait of /bin/true (hyperfine, no shell)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as t:
        subprocess.run(
            ["hyperfine", "-N", "--warmup", "50", "--runs", str(runs), "--export-json", t.name,
             "/bin/true"],
            check=True, capture_output=True)
        r = json.load(open(t.name))["results"][0]
    return r["median"] * 1e6, r["user"] * 1e6 + r["system"] * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release")
    ap.add_argument("-n", type=int, default=4000)
    ap.add_argument("--clients", default="1,2,4,8,16,64")
    args = ap.parse_args()
    ptc = os.path.join(args.bin, "ptc")
    sock = os.path.join(tempfile.mkdtemp(prefix="ptc-stage-"), "ptc.sock")
    daemon = subprocess.Popen([ptc, "serve", "--socket", sock],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            if os.path.exists(sock) and zygote_of(daemon.pid):
                break
            time.sleep(0.01)
        zyg = zygote_of(daemon.pid)
        if zyg is None:
            sys.exit("no zygote")
        fe_wall, fe_cpu = fork_exec_us()
        print(f"fork+exec /bin/true: median wall {fe_wall:.0f} µs, CPU {fe_cpu:.0f} µs")
        for c in [int(x) for x in args.clients.split(",")]:
            # Warm-up round so the pool has grown to this load before measuring.
            subprocess.run([ptc, "bench", "--connect", sock, "-n", "500", "-c", str(c)],
                           check=True, capture_output=True)
            d0, z0 = threads(daemon.pid), threads(zyg)
            out = subprocess.run(
                [ptc, "bench", "--connect", sock, "-n", str(args.n), "-c", str(c),
                 "--format", "json"], check=True, capture_output=True, text=True)
            d1, z1 = threads(daemon.pid), threads(zyg)
            rep = json.loads(out.stdout)
            per = {f"daemon/{k}": v / args.n / 1000 for k, v in delta(d0, d1).items()}
            per["zygote"] = sum(delta(z0, z1).values()) / args.n / 1000
            stages = ", ".join(f"{k} {v:.1f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1]) if v >= 0.05)
            print(f"c={c:>2}: p50 {rep['p50_us']} µs ({rep['p50_us'] / fe_wall:.2f}x fork+exec), "
                  f"p99 {rep['p99_us']} µs, {rep['runs_per_sec']:.0f} runs/s, failed {rep['failed']}; "
                  f"CPU µs/execution: {stages}")
        fe_wall2, _ = fork_exec_us()
        print(f"fork+exec /bin/true again: median wall {fe_wall2:.0f} µs")
    finally:
        daemon.terminate()
        daemon.wait()


if __name__ == "__main__":
    main()
