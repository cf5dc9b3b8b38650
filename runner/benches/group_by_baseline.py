"""Baseline for the aggregate/100k benchmark: the same group-by + sum over 100,000 rows with
plain dicts in CPython. Prints the median time of 20 runs in milliseconds: the aggregation
alone, and with the context's import (`json.loads` of the rows' JSON text, as ptc imports its
encoded context on every run)."""
import json
import statistics
import time

rows = [{"id": i, "cat": f"c{i % 17}", "amount": (i % 1000) * 0.5 + 0.25, "tags": [f"t{i % 5}", "x"]}
        for i in range(100_000)]


def aggregate(rows):
    groups = {}
    for r in rows:
        groups.setdefault(r["cat"], []).append(r)
    sums = [(k, sum(r["amount"] for r in v if r["amount"] is not None)) for k, v in groups.items()]
    return sorted(sums, key=lambda kv: kv[1], reverse=True)


def median_ms(run):
    times = []
    for _ in range(20):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


text = json.dumps({"rows": rows})
alone = median_ms(lambda: aggregate(rows))
imported = median_ms(lambda: aggregate(json.loads(text)["rows"]))
print(f"median {alone:.2f} ms over 20 runs; with json.loads of the context: {imported:.2f} ms")
