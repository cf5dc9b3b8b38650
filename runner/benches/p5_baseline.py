"""CPython baseline for the interpreter bench's p5 (runner/benches/interp.rs): 1,000 generated
maps -> group-by -> sum -> sort -> take 3, written with plain dicts and lists.

Usage: p5_baseline.py [RUNS]
Prints the median CPU time of one evaluation in microseconds (RUNS runs, default 2000).
"""
import statistics
import sys
import time


def p5():
    maps = [{"id": i, "cat": i % 7, "amount": i * 3} for i in range(1000)]
    groups = {}
    for m in maps:
        groups.setdefault(m["cat"], []).append(m)
    sums = [[k, sum(m["amount"] for m in v)] for k, v in groups.items()]
    return sorted(sums, key=lambda kv: kv[1], reverse=True)[:3]


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    assert p5() == [[5, 215358], [4, 214929], [3, 214500]], p5()
    times = []
    for _ in range(runs):
        t = time.process_time()
        p5()
        times.append((time.process_time() - t) * 1e6)
    print(f"{statistics.median(times):.1f}")


main()
