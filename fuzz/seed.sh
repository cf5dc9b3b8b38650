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
print(f"{n} seeds")
PY
