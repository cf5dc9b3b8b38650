"""`ptc mcp --sessions` driven by the official MCP Python SDK: the five session tools, their
payloads byte for byte, and every bound (session cap, idle TTL, memory bound, one eval at a time).

Run with scripts/test-python.sh, or set PTC_BIN. Every test starts its own `ptc mcp` process.
"""

import functools
import json
import os
import subprocess

import anyio
import pytest

from test_mcp import ENV, PTC, long_policy, payload, server

pytestmark = pytest.mark.anyio

SESSION_TOOLS = [
    "lisp_session_start",
    "lisp_session_eval",
    "lisp_session_inspect",
    "lisp_session_list",
    "lisp_session_close",
]


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def tool(session, name, **arguments):
    return payload(await session.call_tool(name, arguments))


async def text(session, name, **arguments):
    """The payload's exact text (what golden assertions pin)."""
    result = await session.call_tool(name, arguments)
    payload(result)
    return result.content[0].text


async def start(session):
    p = await tool(session, "lisp_session_start")
    assert p["status"] == "ok", p
    return p["session_id"]


async def ev(session, sid, program, **more):
    return await tool(session, "lisp_session_eval", session_id=sid, program=program, **more)


async def test_session_tools_are_listed_only_when_enabled():
    async with server() as (session, init):
        assert [t.name for t in (await session.list_tools()).tools] == ["lisp_eval"]
        assert "session" not in init.instructions
        with pytest.raises(Exception, match="the session tools need `ptc mcp --sessions`"):
            await session.call_tool("lisp_session_start", {})
    async with server("--sessions") as (session, init):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert list(tools) == ["lisp_eval", *SESSION_TOOLS]
        assert "lisp_session_start" in init.instructions
        ev_schema = tools["lisp_session_eval"].input_schema
        assert ev_schema["required"] == ["session_id", "program"]
        assert set(ev_schema["properties"]) == {"session_id", "program", "context", "output_schema"}
        assert tools["lisp_session_close"].input_schema["required"] == ["session_id"]
        assert tools["lisp_session_list"].input_schema["properties"] == {}
        assert tools["lisp_session_inspect"].annotations.read_only_hint is True
        assert tools["lisp_session_close"].annotations.destructive_hint is True
        assert "a failed call keeps nothing" in tools["lisp_session_eval"].description
        # lisp_eval stays stateless beside sessions.
        assert (await tool(session, "lisp_eval", program="(def x 1) x"))["result"] == "user=> 1"
        p = await tool(session, "lisp_eval", program="x")
        assert p["reason"] == "runtime_error"


async def test_a_session_keeps_defs_and_history_golden_payloads():
    async with server("--sessions") as (session, _):
        assert await text(session, "lisp_session_start") == (
            '{"status":"ok","session_id":"s1","idle_ttl_ms":600000,"max_memory_bytes":1048576}'
        )
        assert await text(session, "lisp_session_eval", session_id="s1", program="(def x 41) (+ 1 2)") == (
            '{"status":"ok","result":"user=> 3","prints":[],"feedback":null,"truncated":false,'
            '"memory":{"changed":{"x":"41"},"stored_keys":["x"],"truncated":false}}'
        )
        got = await text(session, "lisp_session_eval", session_id="s1", program='(println "y") (def y (inc x)) [y *1]')
        assert got == (
            '{"status":"ok","result":"user=> [42 3]","prints":["y"],"feedback":null,"truncated":false,'
            '"memory":{"changed":{"y":"42"},"stored_keys":["x","y"],"truncated":false}}'
        )
        assert await text(session, "lisp_session_inspect", session_id="s1") == (
            '{"status":"ok","session_id":"s1","memory":{"x":"41","y":"42"},"history":["[42 3]","3"],'
            '"memory_bytes":24,"truncated":false}'
        )
        listed = await tool(session, "lisp_session_list")
        entry = listed["sessions"][0]
        assert isinstance(entry.pop("idle_ms"), int)
        assert listed == {
            "status": "ok",
            "sessions": [],
            "max_sessions": 16,
        } | {"sessions": [entry]}
        assert entry == {"session_id": "s1", "stored_keys": ["x", "y"], "memory_bytes": 24, "evals": 2, "running": False}
        assert await text(session, "lisp_session_close", session_id="s1") == (
            '{"status":"ok","session_id":"s1","closed":true}'
        )
        p = await ev(session, "s1", "x")
        assert p["reason"] == "unknown_session" and "`s1`" in p["message"], p
        assert (await tool(session, "lisp_session_list"))["sessions"] == []


async def test_history_holds_the_last_three_results_and_sessions_are_separate():
    async with server("--sessions") as (session, _):
        a, b = await start(session), await start(session)
        for n in range(1, 5):
            await ev(session, a, str(n))
        assert (await ev(session, a, "[*1 *2 *3]"))["result"] == "user=> [4 3 2]"
        await ev(session, a, "(def only-a 1)")
        p = await ev(session, b, "(def only-b 2) [*1 memory/only-a]")
        assert p["memory"]["stored_keys"] == ["only-b"], p
        assert p["result"] == "user=> [nil nil]"


async def test_context_and_output_schema_in_a_session():
    async with server("--sessions") as (session, _):
        sid = await start(session)
        p = await ev(session, sid, "(def total (reduce + data/xs)) {:n total}", context={"xs": [1, 2, 3]},
                     output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
        assert p["validated"] == {"n": 6} and p["memory"]["changed"] == {"total": "6"}, p
        # The context is not kept; the memory is.
        assert (await ev(session, sid, "[total data/xs]"))["result"] == "user=> [6 nil]"
        # A validation failure keeps nothing.
        p = await ev(session, sid, '(def lost 1) "x"', output_schema={"type": "integer"})
        assert p["reason"] == "validation_error"
        inspected = await tool(session, "lisp_session_inspect", session_id=sid)
        assert list(inspected["memory"]) == ["total"]


async def test_a_failed_eval_keeps_nothing():
    async with server("--sessions") as (session, _):
        sid = await start(session)
        await ev(session, sid, "(def a 1) 10")
        before = await tool(session, "lisp_session_inspect", session_id=sid)
        assert before["memory"] == {"a": "1"} and before["history"] == ["10"]
        for program, reason in [("(def a 2) (/ 1 0)", "runtime_error"), ("(def a 3) (fail :no)", "fail"), ("(def a", "parse_error")]:
            p = await ev(session, sid, program)
            assert p["reason"] == reason and "memory" not in p, p
        assert await tool(session, "lisp_session_inspect", session_id=sid) == before


async def test_the_session_cap():
    async with server("--sessions", "--max-sessions", "2") as (session, _):
        a = await start(session)
        await start(session)
        p = await tool(session, "lisp_session_start")
        assert p["reason"] == "session_limit" and "all 2 sessions are open" in p["message"], p
        await tool(session, "lisp_session_close", session_id=a)
        assert await start(session) == "s3"
        assert (await tool(session, "lisp_session_list"))["max_sessions"] == 2


async def test_an_idle_session_expires():
    async with server("--sessions", "--session-ttl-ms", "1500") as (session, _):
        sid = await start(session)
        assert (await ev(session, sid, "(def k 1) k"))["status"] == "ok"
        await anyio.sleep(2.0)
        p = await ev(session, sid, "k")
        assert p["reason"] == "session_expired", p
        assert "1500 ms" in p["message"]
        assert (await tool(session, "lisp_session_list"))["sessions"] == []
        p = await tool(session, "lisp_session_inspect", session_id=sid)
        assert p["reason"] == "session_expired"


async def test_the_memory_bound():
    async with server("--sessions", "--session-memory-bytes", "1000") as (session, _):
        sid = await start(session)
        assert (await ev(session, sid, "(def small [1 2 3])"))["status"] == "ok"
        p = await ev(session, sid, '(def big (apply str (repeat 2000 "x"))) (count big)')
        assert p["reason"] == "memory_limit", p
        assert p["message"].startswith("limit session_memory_bytes exceeded: ")
        assert "over its bound of 1000" in p["message"]
        inspected = await tool(session, "lisp_session_inspect", session_id=sid)
        assert list(inspected["memory"]) == ["small"] and inspected["memory_bytes"] <= 1000
        # A result too big for *1 is over the bound too, even with no def.
        p = await ev(session, sid, '(apply str (repeat 2000 "x"))')
        assert p["reason"] == "memory_limit"
        assert (await ev(session, sid, "(count small)"))["result"] == "user=> 3"


async def test_previews_in_memory_are_capped():
    async with server("--sessions") as (session, _):
        sid = await start(session)
        p = await ev(session, sid, '(def s (apply str (repeat 1000 "a"))) (count s)')
        assert p["truncated"] is False
        assert p["memory"]["truncated"] is True
        assert p["memory"]["changed"]["s"].endswith("…") and len(p["memory"]["changed"]["s"].encode()) <= 256 + 3
        inspected = await tool(session, "lisp_session_inspect", session_id=sid)
        assert inspected["truncated"] is True


async def test_one_eval_at_a_time_and_a_cancel_leaves_the_session_as_it_was(tmp_path):
    async with server("--sessions", "--policy", long_policy(tmp_path)) as (session, _):
        sid = await start(session)
        await ev(session, sid, "(def kept 7)")
        with anyio.move_on_after(1.5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(functools.partial(ev, session, sid, "(def gone 1) (loop [] (recur))"))
                await anyio.sleep(0.5)
                p = await ev(session, sid, "kept")
                assert p["reason"] == "busy" and "running another call" in p["message"], p
                p = await tool(session, "lisp_session_close", session_id=sid)
                assert p["reason"] == "busy", p
                listed = await tool(session, "lisp_session_list")
                assert listed["sessions"][0]["running"] is True
        # The SDK cancelled the looping call; the session is free and unchanged.
        for _ in range(100):
            p = await ev(session, sid, "[kept memory/gone]")
            if p["status"] == "ok":
                break
            await anyio.sleep(0.05)
        assert p["result"] == "user=> [7 nil]", p


BAD_ARGS = [
    ("lisp_session_eval", {"program": "1"}, "needs a `session_id` argument"),
    ("lisp_session_eval", {"session_id": 1, "program": "1"}, "`session_id` must be a string, got a number"),
    ("lisp_session_eval", {"session_id": "s1"}, "needs a `program` argument"),
    ("lisp_session_eval", {"session_id": "s1", "program": "1", "x": 1}, "unknown argument `x` (it takes session_id"),
    ("lisp_session_start", {"ttl": 5}, "unknown argument `ttl` (it takes no arguments)"),
    ("lisp_session_list", {"all": True}, "unknown argument `all`"),
    ("lisp_session_inspect", {}, "needs a `session_id` argument"),
    ("lisp_session_close", {"session_id": "s1", "force": True}, "unknown argument `force` (it takes only session_id)"),
]


@pytest.mark.parametrize("name,arguments,needle", BAD_ARGS)
async def test_bad_arguments_are_args_errors(name, arguments, needle):
    async with server("--sessions") as (session, _):
        await start(session)
        p = await tool(session, name, **arguments)
        assert p["reason"] == "args_error" and needle in p["message"], p


@pytest.mark.parametrize("sid", ["s2", "nope", "", "s0"])
async def test_unknown_ids(sid):
    async with server("--sessions") as (session, _):
        await start(session)
        for name in ["lisp_session_eval", "lisp_session_inspect", "lisp_session_close"]:
            args = {"session_id": sid, "program": "1"} if name == "lisp_session_eval" else {"session_id": sid}
            p = await tool(session, name, **args)
            assert p["reason"] == "unknown_session", (name, p)
            assert json.dumps(sid) in json.dumps(p["message"]) or f"`{sid}`" in p["message"]


@pytest.mark.parametrize(
    "flags,needle",
    [
        (["--max-sessions", "3"], "--sessions"),
        (["--session-ttl-ms", "10"], "--sessions"),
        (["--sessions", "--max-sessions", "1025"], "1025"),
        (["--sessions", "--max-sessions", "0"], "0"),
        (["--sessions", "--session-ttl-ms", "0"], "0"),
        (["--sessions", "--session-memory-bytes", str(4 * 1024 * 1024 + 1)], "4194305"),
    ],
)
def test_session_flags_are_checked(flags, needle):
    done = subprocess.run([PTC, "mcp", *flags], stdin=subprocess.DEVNULL, capture_output=True, env={**os.environ, **ENV}, timeout=30)
    assert done.returncode == 2, done
    assert needle in done.stderr.decode()
