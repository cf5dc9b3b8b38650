"""CPython baseline for interp p5 (runner/benches/interp.rs): 1,000 generated dicts, grouped by
:cat, :amount summed per group, sorted by the sum, the first 3. Prints the median process CPU
time of one evaluation in microseconds (argument: number of timed repetitions, default 2000,
measured as batches of 100 to keep the clock's resolution out of it)."""

import statistics
import sys
import time


def p5():
    rows = [{"id": i, "cat": i % 7, "amount": i * 3} for i in range(1000)]
    groups = {}
    for r in rows:
        groups.setdefault(r["cat"], []).append(r)
    sums = [[k, sum(r["amount"] for r in v)] for k, v in groups.items()]
    sums.sort(key=lambda kv: kv[1], reverse=True)
    return sums[:3]


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    assert p5() == [[5, 215358], [4, 214929], [3, 214500]], p5()
    batches = []
    for _ in range(max(1, reps // 100)):
        t = time.process_time()
        for _ in range(100):
            p5()
        batches.append((time.process_time() - t) / 100 * 1e6)
    print(f"{statistics.median(batches):.1f}")


main()
