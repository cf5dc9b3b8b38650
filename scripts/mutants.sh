#!/usr/bin/env bash
# Mutation testing of the security- and limit-critical code with cargo-mutants (crates.io).
# Slow (one incremental build and test run per mutant), so it is not part of CI. See docs/TESTING.md.
#
#   scripts/mutants.sh                 # every file below, each against its own package's tests
#   scripts/mutants.sh FILE [FILE...]  # just these files
#   MUTANTS_TIMEOUT=600 MUTANTS_TEST_ARGS="--lib" scripts/mutants.sh shared/src/codec.rs
#   MUTANTS_IN_PLACE=1 scripts/mutants.sh runner/src/alloc.rs
#   MUTANTS_IN_PLACE=1 MUTANTS_CARGO_ARGS="-C --lib -C --test=engine_fake" \
#     scripts/mutants.sh supervisor/src/engine/classify.rs
#
# MUTANTS_CARGO_ARGS (cargo-mutants' -C) limits the targets of both the build and the test
# phase; MUTANTS_TEST_ARGS only reach `cargo test` (after `--`: `-- NAME` filters test names).
# Without -C every mutant builds all of its package's test binaries, minutes each here.
# docs/TESTING.md lists the arguments each file was measured with.
#
# MUTANTS_IN_PLACE=1 mutates this tree itself and builds in its own target/ (incremental, so
# much faster than the clean copy); do not edit or build here meanwhile. cargo-mutants puts
# each file back after its mutant (check `git status` if a run is killed).
#
# Results land in mutants.out/<file>/ (caught.txt, missed.txt, timeout.txt, unviable.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

FILES=(
  shared/src/codec.rs              # size-bounded frames
  shared/src/seccomp.rs            # seccomp program encoding/decoding
  shared/src/protocol.rs           # the runner's rlimits for a policy's limits
  runner/src/harden.rs             # the runner's hardening, one step after another
  runner/src/heap.rs               # the counting allocator and its free lists
  runner/src/zygote.rs             # the fork server
  runner/src/alloc.rs              # the heap budget
  runner/src/eval/mod.rs           # interpreter limit accounting (steps, deadline)
  runner/src/eval/apply.rs         # the depth of lambda calls and of natives' nested calls
  runner/src/eval/code/mod.rs      # register code: the steps it charges, what it declines
  runner/src/eval/fused.rs         # one-pass keep/reduce, map/into: steps, limits, what it declines
  supervisor/src/policy.rs         # policy loader and validator, seccomp compilation
  supervisor/src/check.rs          # what a host can enforce
  supervisor/src/engine/pool.rs    # runner start-up checks (landlock required)
  supervisor/src/engine/classify.rs # classification of how an execution ended
  supervisor/src/daemon/admission.rs # admission and fairness
  supervisor/src/daemon/conn.rs    # the per-connection bounds
)
[ $# -gt 0 ] && FILES=("$@")

command -v cargo-mutants >/dev/null || cargo install --locked cargo-mutants

for f in "${FILES[@]}"; do
  [ -f "$f" ] || { echo "skipping $f: no such file" >&2; continue; }
  out="mutants.out/$(echo "$f" | tr '/' '_')"
  mkdir -p "$out"
  echo "== $f"
  # --copy-target=false: the build copy starts clean instead of duplicating a multi-GB target/.
  # shellcheck disable=SC2086
  # --all-features: the async codec (feature tokio) and the seccomp helpers are tested too.
  where=(--copy-target=false)
  [ -n "${MUTANTS_IN_PLACE:-}" ] && where=(--in-place)
  cargo mutants --file "$f" "${where[@]}" --all-features --timeout "${MUTANTS_TIMEOUT:-300}" \
    --output "$out" ${MUTANTS_ARGS:-} ${MUTANTS_CARGO_ARGS:-} -- ${MUTANTS_TEST_ARGS:-} || true
  for k in caught missed timeout unviable; do
    printf '%s %s\n' "$k" "$(wc -l < "$out/mutants.out/$k.txt" 2>/dev/null || echo 0)"
  done
done
