#!/usr/bin/env bash
# Regenerates expected/X.edn from cases/X.edn with real Clojure 1.11 (oracle.clj),
# one JVM per file. Usage: ./regen.sh            (every cases/*.edn)
#                          ./regen.sh core-arith  (only the named files, without .edn)
# Installs nothing. Afterwards checks that every case carrying :reason failed in
# Clojure and every failing case carries :reason (the public sample excepted),
# that no result is non-plain or a timeout, that ptc/*.edn is well formed, and that
# ../../docs/inventory.tsv lists exactly Clojure's public vars (inventory.clj).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
jar="${CLOJURE_JAR:-/usr/share/java/clojure.jar}"
if ! command -v java >/dev/null 2>&1 || [ ! -f "$jar" ]; then
  echo "regen.sh: java or $jar is missing; install it with: apt-get install -y clojure" >&2
  exit 2
fi
cd "$here"
if [ "$#" -gt 0 ]; then
  names=("$@")
else
  names=()
  for f in cases/*.edn; do names+=("$(basename "$f" .edn)"); done
fi
for n in "${names[@]}"; do
  echo "== $n" >&2
  java -cp "$jar" clojure.main oracle.clj "cases/$n.edn" "expected/$n.edn"
done
# The checked-in inventory of Clojure's vars must name exactly this Clojure's publics.
java -cp "$jar" clojure.main inventory.clj ../../docs/inventory.tsv >&2
python3 - "${names[@]}" <<'PY'
import sys
sys.path.insert(0, ".")
from compare import load_results, read_edn, EMap
REASONS = {"parse_error", "analysis_error", "eval_error", "timeout", "limit_exceeded",
           "tool_error", "tool_not_found", "failed", "validation_error"}
bad = 0
for n in sys.argv[1:]:
    results, problems = load_results(f"expected/{n}.edn")
    for p in problems:
        print(p); bad += 1
    if n == "public":
        # The shared sample predates :reason: its reasons are in public-reasons.edn, which must
        # name exactly the sample's failing cases.
        listed = {}
        for line in open("public-reasons.edn", encoding="utf-8"):
            if line.strip() and not line.lstrip().startswith(";"):
                m = read_edn(line)
                d = {k.name: v for k, v in m} if isinstance(m, EMap) else {}
                listed[d.get("id")] = getattr(d.get("reason"), "name", None)
        failing = {cid for cid, e in results.items() if e.get("error") is not None}
        for cid in sorted(failing ^ set(listed)):
            print(f"public-reasons.edn: {cid}: listed iff it fails in Clojure"); bad += 1
        for cid, r in sorted(listed.items()):
            if r not in REASONS:
                print(f"public-reasons.edn: {cid}: unknown fail reason {r}"); bad += 1
        continue
    for cid, e in results.items():
        err = e.get("error")
        if isinstance(err, str) and (err == "timeout" or err.startswith("NonPlainResult")):
            print(f"{n}: {cid}: {err}: fix the case"); bad += 1
        elif "reason" in e and err is None:
            print(f"{n}: {cid}: has :reason but Clojure returned a value"); bad += 1
        elif err is not None and "reason" not in e:
            print(f"{n}: {cid}: failed in Clojure but has no :reason ({err})"); bad += 1
import glob
seen = set()
for f in sorted(glob.glob("ptc/*.edn")):
    for lineno, line in enumerate(open(f, encoding="utf-8"), 1):
        if not line.strip():
            continue
        where = f"{f}:{lineno}"
        try:
            m = read_edn(line)
        except Exception as e:  # any reader failure is a malformed line
            print(f"{where}: unreadable: {e}"); bad += 1; continue
        d = {k.name: v for k, v in m} if isinstance(m, EMap) else {}
        cid = d.get("id")
        if not isinstance(cid, str) or cid in seen:
            print(f"{where}: missing or duplicate :id"); bad += 1; continue
        seen.add(cid)
        if ("expect" in d) == ("expect-error" in d):
            print(f"{where}: {cid}: needs exactly one of :expect and :expect-error"); bad += 1
        elif "expect-error" in d and getattr(d["expect-error"], "name", None) not in REASONS:
            print(f"{where}: {cid}: unknown fail reason"); bad += 1
        if not isinstance(d.get("program"), str):
            print(f"{where}: {cid}: no :program string"); bad += 1
print(f"regen.sh: checked {len(sys.argv) - 1} expected file(s) and {len(seen)} ptc case(s), {bad} problem(s)", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
