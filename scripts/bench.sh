#!/usr/bin/env bash
# Runs every benchmark once, in one session, and keeps the raw output in target/bench-logs/.
# Figures for BENCHMARKS.md are read from these logs; each bench measures its own baseline in the
# same run (Python for the interpreter, fork+exec of /bin/true and bwrap for the sandbox), so the
# ratios hold even though absolute times drift on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
logs=target/bench-logs
mkdir -p "$logs"
command -v bwrap >/dev/null || echo "note: bubblewrap is not installed (apt-get install -y bubblewrap); its baseline is skipped"
cargo build --release --workspace --bins
for b in "ptc-runner interp" "ptc-shared signature" "ptc-supervisor engine" "ptc-supervisor daemon" "ptc-supervisor mcp"; do
  set -- $b
  echo "== cargo bench -p $1 --bench $2"
  cargo bench -p "$1" --bench "$2" -- --quick --noplot 2>&1 | tee "$logs/$2.txt" | grep -E "time:|thrpt:|baseline|p50|runs/s|RSS|==|^\|" || true
done
