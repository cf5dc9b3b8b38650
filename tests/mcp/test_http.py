"""`ptc mcp --http` driven by the official MCP Python SDK's Streamable HTTP client, and by raw
HTTP where the SDK hides the status codes (401, 403, 404, 413, 503).

Run with scripts/test-python.sh, or set PTC_BIN. Every test starts its own server on
127.0.0.1 port 0 and reads the bound address from the first line of its stderr.
"""

import functools
import http.client
import json
import os
import signal
import socket
import subprocess
import time
from contextlib import asynccontextmanager, contextmanager

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from test_mcp import ENV, PTC, alive, call, descendants, long_policy, payload, runners

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Server:
    """A `ptc mcp --http 127.0.0.1:0` process; `url` is where it listens."""

    def __init__(self, *args, env=None):
        self.p = subprocess.Popen(
            [PTC, "mcp", "--http", "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, **ENV, **(env or {})},
        )
        line = self.p.stderr.readline().decode()
        assert line.startswith("ptc mcp: listening on http://"), line
        self.url = line.split()[-1]
        self.host, port = self.url.removeprefix("http://").removesuffix("/mcp").rsplit(":", 1)
        self.port = int(port)

    def stop(self):
        """SIGTERM; the exit code."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        code = self.p.wait(timeout=15)
        self.p.stderr.close()
        return code

    def post(self, body, headers=None, path="/mcp"):
        """A raw POST: (status, headers, body text)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
            conn.request("POST", path, body=data, headers={**hdrs, **(headers or {})})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read().decode(errors="replace")
        finally:
            conn.close()

    def delete(self, session_id):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session_id})
            return conn.getresponse().status
        finally:
            conn.close()


@contextmanager
def running(*args, env=None):
    server = Server(*args, env=env)
    try:
        yield server
    finally:
        assert server.stop() == 0


@asynccontextmanager
async def sdk(server, headers=None):
    client = create_mcp_http_client(headers=headers)
    async with client:
        async with streamable_http_client(server.url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                yield session, init


def sse_result(text):
    """The JSON-RPC message in an SSE (or plain JSON) answer."""
    datas = [ln[5:].strip() for ln in text.splitlines() if ln.startswith("data:")]
    found = [json.loads(d) for d in datas if d]
    return found[-1] if found else json.loads(text)


# ---------------------------------------------------------------- through the SDK


async def test_initialize_list_call_error_and_context():
    with running() as server:
        async with sdk(server) as (session, init):
            assert init.protocol_version == "2025-11-25"
            assert init.server_info.name == "ptc"
            assert [t.name for t in (await session.list_tools()).tools] == ["lisp_eval"]
            p = await call(session, program='(println "hi") (+ 1 2)')
            assert p == {"status": "ok", "result": "user=> 3", "prints": ["hi"], "feedback": None, "truncated": False}
            p = await call(session, program="(+ 1")
            assert p["reason"] == "parse_error" and "is never closed" in p["message"]
            rows = [{"v": i} for i in range(1000)]
            p = await call(session, program="(->> data/rows (map :v) (reduce +))", context={"rows": rows})
            assert p["result"] == "user=> 499500"


async def test_limits_are_the_stdio_ones():
    with running() as server:
        async with sdk(server) as (session, _):
            p = await call(session, program="1" * (64 * 1024 + 1))
            assert p["reason"] == "args_error" and "65536" in p["message"]
            p = await call(session, program="1", context={"k": "x" * (4 * 1024 * 1024)})
            assert p["reason"] == "args_error" and "4194304" in p["message"]
            # A client's `_meta` is not trusted over HTTP: the stdio stream's own keys are ignored.
            result = await session.call_tool("lisp_eval", {"program": "(+ 1 2)"}, meta={"ptc/preparsed": 1})
            assert payload(result)["result"] == "user=> 3"


async def test_sessions_over_http():
    with running("--sessions") as server:
        async with sdk(server) as (session, _):
            names = [t.name for t in (await session.list_tools()).tools]
            assert names[0] == "lisp_eval" and "lisp_session_eval" in names
            sid = payload(await session.call_tool("lisp_session_start", {}))["session_id"]
            await session.call_tool("lisp_session_eval", {"session_id": sid, "program": "(def x 41)"})
            p = payload(await session.call_tool("lisp_session_eval", {"session_id": sid, "program": "(inc x)"}))
            assert p["result"] == "user=> 42"
        # Another MCP session has its own table: the first one's id means nothing there.
        async with sdk(server) as (other, _):
            p = payload(await other.call_tool("lisp_session_eval", {"session_id": sid, "program": "x"}))
            assert p["status"] == "error" and p["reason"] == "unknown_session", p


async def test_cancel_kills_the_runner_and_the_next_call_works(tmp_path):
    with running("--policy", long_policy(tmp_path)) as server:
        async with sdk(server) as (session, _):
            await call(session, program="(+ 1 2)")
            busy = {}
            with anyio.move_on_after(0.8):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(functools.partial(call, session, program="(loop [] (recur))"))
                    await anyio.sleep(0.6)
                    busy = {p: v for p, v in runners(server.p.pid).items() if v[3] > 0 and v[2] == "R"}
            # Leaving the scope abandoned the call: the SDK sent notifications/cancelled.
            assert busy, "no running runner found"
            t0 = time.monotonic()
            while any(alive(p) for p in busy) and time.monotonic() - t0 < 5.0:
                await anyio.sleep(0.005)
            assert not any(alive(p) for p in busy), "the cancelled call's runner is still alive"
            assert (await call(session, program="(+ 1 2)"))["result"] == "user=> 3"


async def test_eight_concurrent_calls():
    with running("--max-concurrency", "8") as server:
        async with sdk(server) as (session, _):
            results = [None] * 8

            async def one(i):
                results[i] = await call(session, program=f"(reduce + (range {i * 100}))")

            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(one, i)
            assert [r["result"] for r in results] == [f"user=> {sum(range(i * 100))}" for i in range(8)]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_stops_a_running_call_and_leaves_no_child(tmp_path, sig):
    server = Server("--policy", long_policy(tmp_path))
    async with sdk(server) as (session, _):
        got = {}

        async def loop():
            got["p"] = await call(session, program="(loop [] (recur))")

        async with anyio.create_task_group() as tg:
            tg.start_soon(loop)
            await anyio.sleep(0.6)
            assert runners(server.p.pid), "no runner found"
            children = descendants(server.p.pid)
            server.p.send_signal(sig)
        assert got["p"]["reason"] == "shutting_down"
    assert server.stop() == 0
    deadline = time.monotonic() + 2.0
    while any(alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not [p for p in children if alive(p)], "a child outlived ptc mcp --http"


# ---------------------------------------------------------------- raw HTTP


def test_bearer_token_from_the_environment():
    with running(env={"PTC_MCP_TOKEN": "tok-123"}) as server:
        status, headers, _ = server.post(INIT)
        assert status == 401 and headers.get("www-authenticate") == "Bearer"
        status, _, _ = server.post(INIT, {"Authorization": "Bearer tok-124"})
        assert status == 401
        status, _, _ = server.post(INIT, {"Authorization": "Bearer tok-12"})
        assert status == 401
        status, _, body = server.post(INIT, {"Authorization": "Bearer tok-123"})
        assert status == 200 and sse_result(body)["result"]["serverInfo"]["name"] == "ptc"


async def test_bearer_token_from_a_file_with_the_sdk(tmp_path):
    token = tmp_path / "token"
    token.write_text("file-token\n")
    with running("--http-token-file", str(token)) as server:
        assert server.post(INIT)[0] == 401
        async with sdk(server, headers={"Authorization": "Bearer file-token"}) as (session, _):
            assert (await call(session, program="(+ 1 2)"))["result"] == "user=> 3"


def test_origin_allow_list():
    with running("--http-allow-origin", "https://app.example:443") as server:
        for origin in ["http://evil.example", "http://localhost.evil.example:80", "https://app.example:8443"]:
            status, _, _ = server.post(INIT, {"Origin": origin})
            assert status == 403, origin
        for origin in ["http://localhost:5173", "http://127.0.0.1:9", "https://app.example"]:
            status, _, _ = server.post(INIT, {"Origin": origin})
            assert status == 200, origin
        # No Origin (not a browser): allowed.
        assert server.post(INIT)[0] == 200
        # A Host that is not loopback (a rebound DNS name) is refused too.
        assert server.post(INIT, {"Host": "attacker.example"})[0] == 403


def test_bodies_are_bounded_by_the_frame_limit():
    with running() as server:
        status, _, _ = server.post(b"[" + b" " * (8 * 1024 * 1024) + b"]")
        assert status == 413
        assert server.post(b"{}", path="/elsewhere")[0] == 404
        assert server.post(INIT)[0] == 200


def test_open_mcp_sessions_are_capped():
    with running() as server:
        ids = []
        for _ in range(32):
            status, headers, _ = server.post(INIT)
            assert status == 200
            ids.append(headers["mcp-session-id"])
        status, _, body = server.post(INIT)
        assert status == 503 and "32 MCP sessions" in body
        assert server.delete(ids[0]) in (200, 202, 204)
        assert server.post(INIT)[0] == 200


def test_bad_flags_are_refused_at_start(tmp_path):
    empty = tmp_path / "empty"
    empty.write_text("\n")
    bad = (
        ["--http-token-file", str(empty)],
        ["--http-allow-origin", "app.example"],
        ["--http-idle-ms", "99"],  # the idle timeout's bounds: 100 ms to an hour
        ["--http-idle-ms", "3600001"],
    )
    for args in bad:
        p = subprocess.run([PTC, "mcp", "--http", "127.0.0.1:0", *args], env={**os.environ, **ENV}, capture_output=True, timeout=30)
        assert p.returncode == 2, args
        assert b"error:" in p.stderr


def first_bytes(sock):
    """What the server sends first on `sock`: b"" when it closes (or resets) the connection."""
    try:
        return sock.recv(100)
    except ConnectionResetError:
        return b""


def test_idle_connections_are_closed_and_answered_ones_are_not():
    with running("--http-idle-ms", "300") as server:
        idle = socket.create_connection((server.host, server.port), timeout=30)
        half = socket.create_connection((server.host, server.port), timeout=30)
        half.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head never finished
        started = time.monotonic()
        for s in (idle, half):
            got = first_bytes(s)
            assert got == b"", f"an idle connection was answered: {got!r}"
            s.close()
        # Closed by the server (recv returned at its end), after the idle time, not at once.
        assert time.monotonic() - started >= 0.3
        # A connection that keeps asking is served each time, across more than the idle time.
        busy = http.client.HTTPConnection(server.host, server.port, timeout=30)
        try:
            first = None
            for _ in range(3):
                busy.request("GET", "/nowhere")
                r = busy.getresponse()
                assert r.status == 404
                r.read()
                first = first or busy.sock
                assert busy.sock is first, "the connection was not kept"
                time.sleep(0.2)
        finally:
            busy.close()


def test_open_connections_are_capped():
    with running() as server:
        held = [socket.create_connection((server.host, server.port), timeout=30) for _ in range(128)]
        try:
            # Accepted in order: the server holds the 128 idle ones when it takes this one.
            extra = socket.create_connection((server.host, server.port), timeout=30)
            extra.sendall(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            got = first_bytes(extra)
            assert got == b"", f"connection 129 was served: {got!r}"
            extra.close()
        finally:
            for s in held:
                s.close()
        # Closed connections free their places.
        deadline = time.monotonic() + 10
        while True:
            try:
                if server.post(INIT)[0] == 200:
                    break
            except (ConnectionError, http.client.HTTPException):
                pass
            assert time.monotonic() < deadline, "no connection served after the others closed"
            time.sleep(0.05)
