#!/usr/bin/env python3
"""CPU time per execution of each single-threaded stage of `ptc serve` under its default config.

Starts `ptc serve` (no config file, or `--config FILE`) on a temporary socket, runs `ptc bench
--connect` at each client count, and reads every thread's on-CPU time from
/proc/PID/task/TID/schedstat (ns) of the daemon and of each of its zygotes before and after each
round. Prints, per round, p50/p99/throughput from the bench and the CPU per execution of each
thread (tokio workers summed: they are the multi-threaded stage; every other thread and each
zygote is single-threaded), the busiest single-threaded stage and the throughput it caps the
engine at (1 s / its CPU per execution, whatever the number of cores), next to the wall time of
one fork+exec of the same runner binary (it exits at its first hardening step: no IPC socket)
and of /bin/true, measured in the same run. The runners' own CPU and minor faults per execution
come from the zygotes' reaped-children counters (/proc/PID/stat cutime, cstime, cminflt); the kernel's
worker threads' CPU per execution (machine-wide) is printed beside them, not added to the total.

Before/after comparisons: give `--config` once per daemon (e.g. files that differ only in
`runner = ...`); the daemons run side by side and are measured in alternate rounds (`--repeat`),
so both see the same load.

usage: scripts/stage_cpu.py [--bin target/release] [--config FILE]... [--daemon PTC[,CONFIG]]...
                            [-n 4000] [--clients 1,2,4,8,16,64] [--repeat 1]
"""

import argparse
import json
import os
import shutil
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


def zygotes_of(pid):
    out = []
    for c in children(pid):
        try:
            with open(f"/proc/{c}/cmdline", "rb") as f:
                if b"--zygote" in f.read().split(b"\0"):
                    out.append(c)
        except OSError:
            pass
    return sorted(out)


def group(name):
    # tokio's workers are all named alike; blocking-pool threads too.
    return "tokio workers" if name.startswith(("tokio-runtime", "tokio-rt")) else name


def delta(before, after):
    """{group: ns} spent between two snapshots (threads that appeared count from zero)."""
    out = {}
    for tid, (name, ns) in after.items():
        spent = ns - before.get(tid, (name, 0))[1]
        out[group(name)] = out.get(group(name), 0) + spent
    return out


def kernel_threads():
    """On-CPU ns of the kernel's worker threads (kworker, ksoftirqd, rcu*), summed: work the kernel
    defers from the runners (freeing a task and its filter, the unix-socket garbage collector, RCU
    callbacks). Machine-wide, so any other load's deferred work is in it too."""
    total = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/comm") as f:
                if not f.read().startswith(("kworker", "ksoftirqd", "rcu")):
                    continue
            with open(f"/proc/{p}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            continue
    return total


def snapshot(daemon, zygotes):
    return threads(daemon), {z: threads(z) for z in zygotes}


def minor_faults(pids):
    """Minor page faults (each a copy-on-write fault or a first touch) of `pids`, summed."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                total += int(f.read().rsplit(")", 1)[1].split()[7])
        except OSError:
            pass
    return total


def reaped(pids):
    """(CPU ns, minor faults) of the reaped children of `pids` (a zygote reaps its runners, so
    this is every runner it forked and reaped: /proc/PID/stat cutime + cstime, cminflt)."""
    tick = os.sysconf("SC_CLK_TCK")
    cpu = faults = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        faults += int(fields[8])
        cpu += (int(fields[13]) + int(fields[14])) * 1_000_000_000 // tick
    return cpu, faults


def per_execution(before, after, n):
    """{stage: CPU µs per execution}; each zygote is its own (single-threaded) stage."""
    (d0, z0), (d1, z1) = before, after
    per = {f"daemon/{k}": v / n / 1000 for k, v in delta(d0, d1).items()}
    for i, z in enumerate(sorted(z1)):
        per[f"zygote {i}"] = sum(delta(z0.get(z, {}), z1[z]).values()) / n / 1000
    return per


def fork_exec_us(cmd, runs=2000):
    """Median wall µs and mean CPU µs of one fork+exec+wait of `cmd` (hyperfine, no shell; its
    exit status is ignored: the runner binary exits 1 at its first hardening step)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as t:
        subprocess.run(
            ["hyperfine", "-N", "-i", "--warmup", "50", "--runs", str(runs), "--export-json",
             t.name, cmd],
            check=True, capture_output=True)
        r = json.load(open(t.name))["results"][0]
    return r["median"] * 1e6, r["user"] * 1e6 + r["system"] * 1e6


class Daemon:
    """One `ptc serve` on a temporary socket (no config file, or `config`)."""

    def __init__(self, ptc, config, tmp, label):
        self.ptc = ptc
        self.label = label
        self.sock = os.path.join(tmp, f"{label}.sock")
        cmd = [ptc, "serve", "--socket", self.sock] + (["--config", config] if config else [])
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(500):
            if os.path.exists(self.sock) and zygotes_of(self.proc.pid):
                break
            time.sleep(0.01)
        time.sleep(0.5)  # every shard's zygote is up
        if not zygotes_of(self.proc.pid):
            sys.exit(f"{label}: no zygote")

    def round(self, n, c):
        """One measured round of `n` runs at `c` clients, after a 500-run warm-up round."""
        bench = [self.ptc, "bench", "--connect", self.sock, "-c", str(c)]
        subprocess.run(bench + ["-n", "500"], check=True, capture_output=True)
        pid = self.proc.pid
        zyg = zygotes_of(pid)
        before, f0, r0 = snapshot(pid, zyg), minor_faults(zyg), reaped(zyg)
        k0 = kernel_threads()
        out = subprocess.run(bench + ["-n", str(n), "--format", "json"], check=True,
                             capture_output=True, text=True)
        # The last runners are reaped just after their Step came back: let them be.
        time.sleep(0.2)
        after, f1, r1 = snapshot(pid, zyg), minor_faults(zyg), reaped(zyg)
        kernel_us = (kernel_threads() - k0) / n / 1000
        rep = json.loads(out.stdout)
        per = per_execution(before, after, n)
        runner_us = (r1[0] - r0[0]) / n / 1000
        runner_faults = (r1[1] - r0[1]) / n
        return rep, per, (f1 - f0) / n, runner_us, runner_faults, kernel_us

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def print_round(label, c, fe_wall, rep, per, zfaults, runner_us, runner_faults, kernel_us):
    stages = ", ".join(f"{k} {v:.1f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1])
                       if v >= 0.05)
    single = {k: v for k, v in per.items() if k != "daemon/tokio workers"}
    busiest = max(single, key=single.get)
    total = sum(per.values()) + runner_us
    print(f"{label} c={c:>2}: p50 {rep['p50_us']} µs ({rep['p50_us'] / fe_wall:.2f}x fork+exec), "
          f"p99 {rep['p99_us']} µs ({rep['p99_us'] / rep['p50_us']:.1f}x p50), "
          f"{rep['runs_per_sec']:.0f} runs/s, failed {rep['failed']}; "
          f"busiest single-threaded stage: {busiest} {single[busiest]:.1f} µs "
          f"(caps {1e6 / single[busiest]:.0f} runs/s); zygote page faults/execution "
          f"{zfaults:.1f}; runner (reaped children) CPU {runner_us:.0f} µs, "
          f"{runner_faults:.0f} faults; daemon+zygotes+runner {total:.0f} µs/execution; "
          f"kernel threads (machine-wide) {kernel_us:.0f} µs/execution; "
          f"CPU µs/execution: {stages}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release")
    ap.add_argument("--config", action="append",
                    help="a `ptc serve` config file (default: none, the defaults); given more "
                    "than once, one daemon per file, measured in alternate rounds")
    ap.add_argument("-n", type=int, default=4000)
    ap.add_argument("--clients", default="1,2,4,8,16,64")
    ap.add_argument("--daemon", action="append", default=[],
                    help="PTC[,CONFIG]: one more daemon from another `ptc` binary (its own client "
                    "library benches it), measured in alternate rounds with the others")
    ap.add_argument("--repeat", type=int, default=1, help="rounds per client count and daemon")
    args = ap.parse_args()
    ptc = os.path.join(args.bin, "ptc")
    runner = os.path.join(args.bin, "ptc-runner")
    tmp = tempfile.mkdtemp(prefix="ptc-stage-")
    configs = args.config or [None]
    daemons = []
    try:
        for i, cfg in enumerate(configs):
            daemons.append(Daemon(ptc, cfg, tmp, os.path.basename(cfg) if cfg else f"default{i}"))
        for i, spec in enumerate(args.daemon):
            other, _, cfg = spec.partition(",")
            daemons.append(Daemon(other, cfg or None, tmp, f"{os.path.basename(other)}{i}"))
        fe_wall, fe_cpu = fork_exec_us(runner)
        bt_wall, _ = fork_exec_us("/bin/true")
        print(f"fork+exec {runner}: median wall {fe_wall:.0f} µs, CPU {fe_cpu:.0f} µs; "
              f"/bin/true: {bt_wall:.0f} µs; zygotes: {len(zygotes_of(daemons[0].proc.pid))}; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        for c in [int(x) for x in args.clients.split(",")]:
            for _ in range(args.repeat):
                for d in daemons:
                    print_round(d.label, c, fe_wall, *d.round(args.n, c))
        fe_wall2, _ = fork_exec_us(runner)
        print(f"fork+exec of the runner again: median wall {fe_wall2:.0f} µs; "
              f"load {os.getloadavg()[0]:.1f}")
    finally:
        for d in daemons:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
