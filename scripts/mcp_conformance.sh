#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance from npm, server mode)
# against `ptc mcp --http` on a free loopback port.
#
# Installs the suite into target/mcp-conformance (in $CARGO_TARGET_DIR when set) on first use,
# builds `ptc` and `ptc-runner` (debug) unless PTC_BIN is set, starts `ptc mcp --http 127.0.0.1:0`
# (the bound address is the first line of its stderr), runs the suite's active server scenarios
# with scripts/mcp-conformance-baseline.yml as the expected failures (each explained there), and
# stops the server with SIGTERM, checking it exits 0. Extra arguments go to the suite (e.g.
# `--scenario ping`, `--suite pending`, `--verbose`); results are saved under
# target/mcp-conformance/results.
#
# Exit: the suite's (0: every scenario passed or failed as the baseline expects; 1: an unexpected
# failure, or a baseline entry that now passes), or 3 when node/npm or the suite cannot be had.
# Needs Node >= 18; suite versions after 0.1.13 need Node >= 22 (PTC_CONFORMANCE_VERSION picks one).
set -euo pipefail
cd "$(dirname "$0")/.."

version="${PTC_CONFORMANCE_VERSION:-0.1.13}"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
dir="$target/mcp-conformance"

command -v node >/dev/null && command -v npm >/dev/null \
  || { echo "error: node and npm are needed (apt-get install nodejs npm)" >&2; exit 3; }
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 18 ] || { echo "error: Node >= 18 is needed, this is $(node --version)" >&2; exit 3; }

suite="$dir/node_modules/@modelcontextprotocol/conformance"
if [ "$(node -p "require('$suite/package.json').version" 2>/dev/null || true)" != "$version" ]; then
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --silent \
    "@modelcontextprotocol/conformance@$version" >/dev/null \
    || { echo "error: cannot install @modelcontextprotocol/conformance@$version" >&2; exit 3; }
fi

if [ -z "${PTC_BIN:-}" ]; then
  cargo build -q -p ptc-supervisor -p ptc-runner --bins
  PTC_BIN="$target/debug/ptc"
fi
export PTC_POLICIES="${PTC_POLICIES:-$PWD/policies}"

log="$(mktemp)"
"$PTC_BIN" mcp --http 127.0.0.1:0 2>"$log" &
server=$!
stop() {
  kill -TERM "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null
}
trap 'stop; rm -f "$log"' EXIT

url=""
for _ in $(seq 300); do
  url="$(sed -n '1s/^ptc mcp: listening on //p' "$log")"
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$log" >&2; echo "error: ptc mcp --http exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$url" ] || { echo "error: ptc mcp --http did not say where it listens" >&2; exit 1; }
echo "ptc mcp --http at $url; conformance suite $version" >&2

set +e
node "$suite/dist/index.js" server --url "$url" \
  --expected-failures scripts/mcp-conformance-baseline.yml -o "$dir/results" "$@"
rc=$?
set -e

trap 'rm -f "$log"' EXIT
kill -TERM "$server"
if ! wait "$server"; then
  cat "$log" >&2
  echo "error: ptc mcp --http did not exit 0 on SIGTERM" >&2
  exit 1
fi
exit "$rc"
