"""Baseline for the `pipelines` bench: five LLM-style data pipelines over a 10,000-order JSON
context, written as a Python programmer would with plain dicts and lists.

Usage: pipelines_baseline.py DATA.json [RUNS]
Writes the context to DATA.json (the bench loads the same file), then times each pipeline over
the loaded data (median CPU time of RUNS, default 30) and prints one JSON object on stdout:
{"p1": {"us": median_microseconds, "result": ...}, ...}, and the same for "p3_as_written" (p3 with
the PTC-Lisp program's fns and records, reported beside the ratios, never one of them).
"""
import functools
import json
import re
import statistics
import sys
import time

FIRST = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Ken", "Radia", "Leslie", "Frances"]
LAST = ["Lovelace", "Hopper", "Turing", "Dijkstra", "Liskov", "Knuth", "Thompson", "Perlman"]
DOMAINS = ["Example.com", "mail.org", "CORP.net", "shop.io", "data.co"]
STATUS = ["paid", "pending", "refunded", "shipped"]
TIERS = ["gold", "silver", "bronze"]


def make_context():
    orders = []
    for i in range(10_000):
        first, last = FIRST[i % 10], LAST[(i * 3) % 8]
        items = [{"sku": f"SKU-{(i * 13 + j) % 500:04d}", "qty": (i + j) % 5 + 1,
                  "price": (i * (j + 1)) % 100 + 0.5} for j in range(i % 3 + 1)]
        orders.append({"id": i, "customer_id": (i * 7919) % 1000,
                       "status": STATUS[(i * 31 + i // 7) % 4],
                       "total": ((i * 7919) % 50000) / 100,
                       "name": f"{first} {last}",
                       "email": f"{first}.{last}{i % 100}@{DOMAINS[i % 5]}",
                       "items": items})
    customers = [{"id": c, "name": f"{FIRST[c % 10]} {LAST[c % 8]} #{c}", "tier": TIERS[c % 3],
                  "country": ["US", "DE", "FR", "JP"][c % 4]} for c in range(1000)]
    return {"orders": orders, "customers": customers}


def p1(d):
    paid = [o for o in d["orders"] if o["status"] == "paid" and o["total"] > 250]
    return [o["id"] for o in sorted(paid, key=lambda o: o["total"], reverse=True)[:10]]


def p2(d):
    groups = {}
    for o in d["orders"]:
        groups.setdefault(o["status"], []).append(o)
    rows = [{"status": s, "n": len(os), "revenue": sum(o["total"] for o in os),
             "max": max(o["total"] for o in os)} for s, os in groups.items()]
    return sorted(rows, key=lambda r: r["revenue"], reverse=True)


def p3(d):
    by_id = {c["id"]: c for c in d["customers"]}
    acc = {}
    for o in d["orders"]:
        c = by_id.get(o["customer_id"])
        if c is not None and c["tier"] == "gold":
            acc[c["name"]] = acc.get(c["name"], 0) + o["total"]
    return [[k, v] for k, v in sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]


def p3_as_written(d):
    """p3 with the PTC-Lisp program's structure: a fn called per order (`keep`) that builds a
    record, and a fn called per kept record (`reduce`). Not the baseline of any ratio's target
    (`p3` is: what a Python programmer would write); reported beside it, to tell what an
    interpreter pays for the program's calls and records from what it pays per operation."""
    by_id = dict(map(lambda c: (c["id"], c), d["customers"]))

    def pick(o):
        c = by_id.get(o["customer_id"])
        if c is not None and c["tier"] == "gold":
            return {"customer": c["name"], "total": o["total"]}
        return None

    def add(acc, r):
        acc[r["customer"]] = acc.get(r["customer"], 0) + r["total"]
        return acc

    kept = [r for r in map(pick, d["orders"]) if r is not None]
    acc = functools.reduce(add, kept, {})
    return [[k, v] for k, v in sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]


DOMAIN_RE = re.compile(r"@([a-z0-9.-]+)$")


def p4(d):
    freq = {}
    for o in d["orders"]:
        email = o["email"].lower()
        m = DOMAIN_RE.search(email)
        domain = m.group(1) if m else None
        key = o["name"].split(" ")[0].upper() + "@" + str(domain)
        freq[key] = freq.get(key, 0) + 1
    top = sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    return ",".join(f"{k}:{n}" for k, n in top)


def p5(d):
    xs = [[o["id"], it["sku"], it["qty"] * it["price"]]
          for o in d["orders"] if o["status"] == "shipped"
          for it in o["items"] if it["qty"] >= 3
          if it["qty"] * it["price"] > 100]
    return [len(xs), xs[:3]]


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    with open(path, "w") as f:
        json.dump(make_context(), f)
    with open(path) as f:
        data = json.load(f)
    out = {}
    named = [("p1", p1), ("p2", p2), ("p3", p3), ("p4", p4), ("p5", p5),
             ("p3_as_written", p3_as_written)]
    for name, fn in named:
        times = []
        for _ in range(runs):
            t = time.process_time()
            result = fn(data)
            times.append((time.process_time() - t) * 1e6)
        out[name] = {"us": statistics.median(times), "result": result}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
