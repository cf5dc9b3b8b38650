"""`ptc mcp` driven by the official MCP Python SDK (and, where the SDK hides the wire, raw JSON-RPC).

Run with scripts/test-python.sh (it installs `mcp` and `pytest` and builds `ptc`), or set PTC_BIN.
Every test starts its own server over stdio: a real `ptc mcp` process with its embedded engine.
"""

import functools
import json
import os
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]
PTC = os.environ.get("PTC_BIN", str(ROOT / "target" / "debug" / "ptc"))
ENV = {"PTC_POLICIES": str(ROOT / "policies"), "RUST_LOG": "error"}
if "PTC_RUNNER" in os.environ:
    ENV["PTC_RUNNER"] = os.environ["PTC_RUNNER"]

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


# ---------------------------------------------------------------- /proc helpers


def proc_table():
    """pid -> (ppid, comm, state, cpu ticks) for every live process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), comm, fields[0], int(fields[11]) + int(fields[12]))
    return table


def descendants(root):
    table = proc_table()
    found, frontier = {}, {root}
    while frontier:
        children = {p for p, (pp, *_rest) in table.items() if pp in frontier and p not in found}
        for c in children:
            found[c] = table[c]
        frontier = children
    return found


def server_pid():
    """The `ptc mcp` child of this test process."""
    for pid, (ppid, comm, _s, _c) in proc_table().items():
        if ppid == os.getpid() and comm == "ptc":
            return pid
    raise AssertionError("no ptc mcp child found")


def alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def runners(root):
    return {p: v for p, v in descendants(root).items() if v[1].startswith("ptc-runner")}


# ---------------------------------------------------------------- SDK helpers


@asynccontextmanager
async def server(*args):
    params = StdioServerParameters(command=PTC, args=["mcp", *args], env=ENV)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            yield session, init


def payload(result):
    """The structured payload, after checking the envelope agrees with it."""
    sc = result.structured_content
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert json.loads(result.content[0].text) == sc
    assert result.is_error == (sc["status"] == "error")
    return sc


async def call(session, **arguments):
    return payload(await session.call_tool("lisp_eval", arguments))


# ---------------------------------------------------------------- tests


async def test_initialize_and_tools_list():
    async with server() as (session, init):
        assert init.protocol_version == "2025-11-25"
        assert init.server_info.name == "ptc"
        assert init.capabilities.tools is not None
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == ["lisp_eval"]
        tool = tools[0]
        assert tool.description.startswith("Runs a PTC-Lisp program")
        assert "No tools are callable inside the program" in tool.description
        assert tool.input_schema["required"] == ["program"]
        assert set(tool.input_schema["properties"]) == {"program", "context", "output_schema"}
        await session.send_ping()


async def test_unknown_tool_is_a_protocol_error():
    async with server() as (session, _):
        with pytest.raises(Exception, match="unknown tool `nope`"):
            await session.call_tool("nope", {})
        assert (await call(session, program="1"))["result"] == "user=> 1"


async def test_good_call_is_pinned_byte_for_byte():
    async with server() as (session, _):
        result = await session.call_tool("lisp_eval", {"program": '(println "hi") (+ 1 2)'})
        assert result.is_error is False
        assert result.content[0].text == (
            '{"status":"ok","result":"user=> 3","prints":["hi"],"feedback":null,"truncated":false}'
        )


ERRORS = [
    ("parse_error", {"program": "(+ 1"}, "is never closed"),
    ("runtime_error", {"program": "(/ 1 0)"}, "divide by zero"),
    # A limit other than compute or heap is a runtime_error naming it (quick: 400 frames).
    ("runtime_error", {"program": "(defn f [n] (inc (f n))) (f 0)"}, "limit max_depth exceeded"),
    # Every compute budget is `timeout`: the 1 s clock, or on a fast host the step budget first.
    ("timeout", {"program": "(loop [] (recur))"}, ("1000 ms", "step budget")),
    (
        "memory_limit",
        {"program": '(loop [s "x" i 0] (if (< i 40) (recur (str s s) (inc i)) (count s)))'},
        "heap limit",
    ),
    ("args_error", {}, "needs a `program` argument"),
    ("args_error", {"program": 42}, "must be a string, got a number"),
    ("args_error", {"program": "   "}, "only whitespace"),
    ("args_error", {"program": "1", "context": [1]}, "must be an object"),
    ("args_error", {"program": "1", "colour": "red"}, "unknown argument `colour`"),
    ("validation_error", {"program": '"x"', "output_schema": {"type": "integer"}}, ""),
]


@pytest.mark.parametrize("reason,arguments,needle", ERRORS)
async def test_error_reasons(reason, arguments, needle):
    async with server() as (session, _):
        p = await call(session, **arguments)
        assert p["status"] == "error" and p["reason"] == reason, p
        needles = needle if isinstance(needle, tuple) else (needle,)
        assert any(n in p["message"] for n in needles), p["message"]
        assert p["feedback"] == p["message"]
        assert "result" not in p


async def test_fail_carries_its_value():
    async with server() as (session, _):
        p = await call(session, program="(fail {:x 1})")
        assert p == {
            "status": "error",
            "reason": "fail",
            "message": "{:x 1}",
            "feedback": "{:x 1}",
            "result": "{:x 1}",
        }


async def test_context_is_read_as_data():
    rows = [{"v": i} for i in range(1000)]
    async with server() as (session, _):
        p = await call(session, program="(->> data/rows (map :v) (reduce +))", context={"rows": rows})
        assert p["result"] == "user=> 499500"


async def test_output_schema_pass_returns_validated_json():
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["n", "tags"],
    }
    async with server() as (session, _):
        p = await call(session, program='{:n 2 :tags ["a" "b"]}', output_schema=schema)
        assert p["status"] == "ok"
        assert p["validated"] == {"n": 2, "tags": ["a", "b"]}


async def test_output_schema_fail_and_non_json_values():
    async with server() as (session, _):
        p = await call(
            session,
            program="{:n \"two\"}",
            output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        )
        assert p["reason"] == "validation_error"
        p = await call(session, program="{:rows [{:ts (/ 1.0 0)}]}", output_schema={"type": "object"})
        assert p["reason"] == "validation_error"
        assert p["message"].startswith("non-JSON-encodable value at rows[0].ts")


async def test_oversized_inputs_get_typed_answers():
    async with server() as (session, _):
        p = await call(session, program="1" * (64 * 1024 + 1))
        assert p["reason"] == "args_error" and "65536" in p["message"]
        p = await call(session, program="1", context={"k": "x" * (4 * 1024 * 1024)})
        assert p["reason"] == "args_error" and "4194304" in p["message"]
        p = await call(session, program="1", context={"k": "x" * (9 * 1024 * 1024)})
        assert p["reason"] == "args_error" and "frame limit" in p["message"]
        # The server is still serving.
        assert (await call(session, program="(+ 1 2)"))["result"] == "user=> 3"


async def test_prints_are_capped_and_marked():
    async with server() as (session, _):
        p = await call(session, program='(dotimes [i 40] (println (apply str (repeat 3000 "x")))) 1')
        assert p["truncated"] is True
        assert sum(len(s.encode()) for s in p["prints"]) <= 32 * 1024


async def test_busy_is_immediate(tmp_path):
    # The long policy: under the shipped one a fast host ends the loop (step budget) before 0.3 s.
    async with server("--max-concurrency", "1", "--policy", long_policy(tmp_path)) as (session, _):
        async with anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(call, session, program="(loop [] (recur))"))
            await anyio.sleep(0.3)
            t0 = time.monotonic()
            p = await call(session, program="(+ 1 2)")
            assert p["reason"] == "busy"
            assert time.monotonic() - t0 < 0.5


async def test_cancel_kills_the_runner_and_the_server_keeps_serving(tmp_path):
    # The long policy: under the shipped one a fast host ends the loop (step budget) before 0.4 s.
    async with server("--policy", long_policy(tmp_path)) as (session, _):
        pid = server_pid()
        await call(session, program="(+ 1 2)")
        busy = {}
        with anyio.move_on_after(0.6):
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(call, session, program="(loop [] (recur))"))
                await anyio.sleep(0.4)
                busy = {p: v for p, v in runners(pid).items() if v[3] > 0 and v[2] == "R"}
        # Leaving the scope abandoned the call: the SDK sent notifications/cancelled.
        t0 = time.monotonic()
        assert busy, "no running runner found"
        while any(alive(p) for p in busy) and time.monotonic() - t0 < 1.0:
            time.sleep(0.002)
        gone_after = time.monotonic() - t0
        assert not any(alive(p) for p in busy)
        assert gone_after < 0.1, f"runner still alive {gone_after * 1000:.0f} ms after the cancel"
        assert (await call(session, program="(+ 1 2)"))["result"] == "user=> 3"


async def test_eight_concurrent_calls():
    async with server("--max-concurrency", "8") as (session, _):
        results = [None] * 8

        async def one(i):
            results[i] = await call(session, program=f"(reduce + (range {i * 100}))")

        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(one, i)
        assert [r["result"] for r in results] == [f"user=> {sum(range(i * 100))}" for i in range(8)]


# ---------------------------------------------------------------- raw JSON-RPC (what the SDK hides)


class Raw:
    def __init__(self, *args):
        self.p = subprocess.Popen(
            [PTC, "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, **ENV},
        )

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def recv(self):
        line = self.p.stdout.readline()
        assert line, "server closed stdout"
        return json.loads(line)

    def initialize(self, version):
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
            }
        )
        got = self.recv()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return got["result"]["protocolVersion"]


@pytest.mark.parametrize("asked,agreed", [("2025-11-25", "2025-11-25"), ("2025-06-18", "2025-06-18"), ("2024-11-05", "2025-11-25")])
def test_protocol_version_negotiation(asked, agreed):
    raw = Raw()
    try:
        assert raw.initialize(asked) == agreed
    finally:
        raw.p.stdin.close()
        assert raw.p.wait(timeout=10) == 0


def long_policy(tmp_path):
    """A policy file whose calls may run 10 s (the shipped ones stop a loop after 1 s), with a
    step budget no loop exhausts in that time, so only the wall clock or the test ends it."""
    policy = tmp_path / "long.toml"
    policy.write_text(
        "[limits]\ntimeout_ms = 10000\ncpu_ms = 10000\nmax_steps = 100000000000\n"
        f'[isolation]\nseccomp = "{ROOT / "policies" / "seccomp" / "runner.json"}"\n'
    )
    return str(policy)


def test_eof_lets_a_quick_call_finish():
    raw = Raw()
    raw.initialize("2025-11-25")
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(+ 1 2)"}}})
    raw.p.stdin.close()
    assert raw.recv()["result"]["structuredContent"]["result"] == "user=> 3"
    assert raw.p.wait(timeout=5) == 0


def test_eof_stops_running_calls_and_leaves_no_child(tmp_path):
    raw = Raw("--policy", long_policy(tmp_path))
    raw.initialize("2025-11-25")
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "lisp_eval", "arguments": {"program": "(loop [] (recur))"}}})
    time.sleep(0.3)
    children = descendants(raw.p.pid)
    assert any(v[1].startswith("ptc-runner") for v in children.values())
    t0 = time.monotonic()
    raw.p.stdin.close()
    answer = raw.recv()
    assert answer["id"] == 1
    assert answer["result"]["structuredContent"]["reason"] == "shutting_down"
    assert raw.p.wait(timeout=5) == 0
    assert time.monotonic() - t0 < 4.0  # the 2 s grace, not the policy's 10 s
    deadline = time.monotonic() + 1.0
    while any(alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [p for p in children if alive(p)], "a child outlived ptc mcp"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
