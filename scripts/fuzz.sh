#!/usr/bin/env bash
# Runs the cargo-fuzz targets in fuzz/ (not part of the workspace, not in CI), each for
# FUZZ_SECONDS (default 60) under `nice -n 19`, with the corpus in fuzz/corpus/<target> and any
# crash in fuzz/artifacts/<target>. cargo-fuzz needs nightly-only rustc flags: on a stable
# toolchain RUSTC_BOOTSTRAP=1 unlocks them (set here unless a nightly is in use).
#
#   scripts/fuzz.sh                              # every target, 60 s each
#   FUZZ_SECONDS=1800 scripts/fuzz.sh run_program
#   FUZZ_JOBS=2 scripts/fuzz.sh                  # libFuzzer -fork=2 (one process per core)
#
# A crash prints the input's path; reproduce it with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run <target> fuzz/artifacts/<target>/crash-...
# and add it as a regression test next to the code it broke (see docs/TESTING.md).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

TARGETS=(run_program decode_client_frame decode_runner_frame check_context)
[ $# -gt 0 ] && TARGETS=("$@")
SECONDS_EACH="${FUZZ_SECONDS:-60}"

command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz
rustc --version | grep -q nightly || export RUSTC_BOOTSTRAP=1

[ -d corpus/run_program ] || ./seed.sh

for t in "${TARGETS[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  echo "== $t: ${SECONDS_EACH}s"
  # -timeout: wall-clock seconds one input may take. The run_program target's own deadline is
  # 200 ms of evaluation, but at nice 19 on a busy machine an input can wait seconds for a CPU:
  # 10 s gave false "timeouts" of inputs that need 0.15 s of CPU. A real hang still shows.
  # -rss_limit_mb: the decoders' budget is a small multiple of the input, far below this.
  nice -n 19 timeout $((SECONDS_EACH + 300)) cargo fuzz run "$t" "corpus/$t" -- \
    -max_total_time="$SECONDS_EACH" -timeout="${FUZZ_TIMEOUT:-60}" -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="artifacts/$t/" ${FUZZ_JOBS:+-fork="$FUZZ_JOBS"} -print_final_stats=1
done
