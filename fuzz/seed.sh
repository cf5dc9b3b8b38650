#!/usr/bin/env bash
# Seeds the run_program corpus with every program of the conformance suite.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/run_program
python3 - <<'PY'
import glob, os, re
n = 0
for f in glob.glob("../tests/conformance/*/*.edn"):
    for line in open(f, encoding="utf-8"):
        m = re.search(r':program "((?:[^"\\]|\\.)*)"', line)
        if m:
            n += 1
            body = bytes(m.group(1), "utf-8").decode("unicode_escape").encode("latin-1", "replace")
            open(f"corpus/run_program/seed{n:05}", "wb").write(body)
# The hostile programs of runner/tests/support/hostile.rs, in small doses (the fuzzer grows them).
for name, body in [("quotes", "'" * 300 + "x"), ("discards", "#_" * 300 + "1 2"),
                   ("thread", "(-> 1 " + "inc " * 1500 + ")"),
                   ("cond", "(cond " + "false 1 " * 1500 + ":else 2)"),
                   ("juxt", "(loop [f identity i 0] (if (< i 1000) (recur (juxt f) (inc i)) (f 1)))"),
                   ("sort", "(sort (fn [a b] (even? (+ a (* 7 b)))) (range 300))")]:
    n += 1
    open(f"corpus/run_program/hostile-{name}", "w").write(body)
print(f"{n} seeds")
PY
