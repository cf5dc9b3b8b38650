"""The daemon path: a real `ptc serve` on a temp socket, used through Client.connect."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

import ptc_sandbox as ptc


def test_runs_tools_and_memory_through_a_daemon(daemon):
    client = ptc.Client.connect(daemon.socket)
    step = client.run(
        '(def seen (tool/orders {:status "open"})) (reduce + (map :total seen))',
        tools={"orders": ptc.Tool(lambda status: [{"total": 5}, {"total": 7}],
                                  signature="(status :string) -> [{total :int}]")},
        signature="() -> :int",
    )
    assert step.raise_for_fail().value == 12
    again = client.run("(count memory/seen)", memory=step)
    assert again.value == 2


def test_the_same_failures_as_embedded(daemon, client):
    remote = ptc.Client.connect(daemon.socket)
    for program, kw in [("(+ 1", {}), ("(/ 1 0)", {}), ("(loop [] (recur))", {"timeout_ms": 200}),
                        ('"x"', {"signature": "() -> :int"})]:
        a, b = remote.run(program, **kw), client.run(program, **kw)
        assert a.fail.system_reason == b.fail.system_reason, program


def test_async_and_threads_through_a_daemon(daemon):
    client = ptc.Client.connect(daemon.socket)

    async def many():
        async def add(a, b):
            return a + b

        steps = await asyncio.gather(*[
            client.arun("(tool/add {:a data/i :b 1})", context={"i": i}, tools={"add": add})
            for i in range(10)
        ])
        return [s.value for s in steps]

    assert asyncio.run(many()) == list(range(1, 11))
    with ThreadPoolExecutor(max_workers=6) as pool:
        values = list(pool.map(lambda i: client.run("(* data/i 2)", context={"i": i}).value,
                               range(20)))
    assert values == [2 * i for i in range(20)]


def test_connecting_to_nothing_is_a_client_error(tmp_path):
    with pytest.raises(ptc.ClientError) as info:
        ptc.Client.connect(tmp_path / "missing.sock")
    assert "missing.sock" in str(info.value)


def test_a_lost_daemon_is_runner_crashed(daemon_factory):
    d = daemon_factory()
    client = ptc.Client.connect(d.socket)
    assert client.run("(+ 1 2)").value == 3
    d.proc.kill()
    d.proc.wait()
    step = client.run("(+ 1 2)")
    with pytest.raises(ptc.RunnerCrashed):
        step.raise_for_fail()
