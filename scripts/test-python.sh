#!/usr/bin/env bash
# The Python tests: `ptc mcp` driven over stdio by the official MCP Python SDK (tests/mcp/), and
# the ptc_sandbox package (python/tests/), which this installs with `pip install ./python` exactly
# as a user would (maturin, its build backend building ptc-runner into the package; debug
# profile here, sharing the workspace's target directory, unless PTC_PY_PROFILE names another).
# Creates a virtual environment in target/py-venv (in $CARGO_TARGET_DIR when that is set) with
# tests/mcp/requirements.txt and python/tests/requirements.txt, builds `ptc` and `ptc-runner`
# (debug) unless PTC_BIN is set, and runs pytest. Extra arguments go to pytest.
# Exit 3: Python or its dependencies cannot be installed here (the Rust wrapper test skips on
# that, unless CI=true).
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
venv="$target/py-venv"
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get install -y -qq python3-venv >/dev/null 2>&1 || true
    fi
    rm -rf "$venv"
    python3 -m venv "$venv" || { echo "error: cannot create a Python venv (install python3-venv)" >&2; exit 3; }
  fi
fi
if ! "$venv/bin/python" -c "import mcp, pytest, anyio, maturin" 2>/dev/null; then
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    -r tests/mcp/requirements.txt -r python/tests/requirements.txt \
    || { echo "error: cannot install the Python test requirements" >&2; exit 3; }
fi
if [ -z "${PTC_BIN:-}" ]; then
  cargo build -q -p ptc-supervisor -p ptc-runner --bins
  export PTC_BIN="$target/debug/ptc"
fi
# maturin (in the venv, hence PATH) builds without isolation: no download per run.
PATH="$venv/bin:$PATH" MATURIN_PEP517_ARGS="--profile ${PTC_PY_PROFILE:-dev}" \
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
  --force-reinstall --no-deps ./python
exec "$venv/bin/python" -m pytest tests/mcp python/tests -q "$@"
