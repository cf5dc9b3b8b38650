"""Every failure reason a run can reach, each raised as its own exception class."""

import asyncio
import os
import threading

import pytest

import ptc_sandbox as ptc
from ptc_sandbox import _native

CASES = [
    ("(+ 1", {}, ptc.ParseError, "parse_error"),
    ("(eval 1)", {}, ptc.AnalysisError, "analysis_error"),
    ("(/ 1 0)", {}, ptc.EvalError, "eval_error"),
    ("(loop [] (recur))", {"timeout_ms": 200}, ptc.Timeout, "timeout"),
    ('(loop [s "x"] (recur (str s s)))', {}, ptc.MemoryExceeded, "memory_exceeded"),
    ('"x"', {"signature": "() -> :int"}, ptc.ValidationError, "validation_error"),
    ("(tool/nope)", {}, ptc.ToolNotFound, "tool_not_found"),
    ('(fail "gave up")', {}, ptc.ProgramFailed, "failed"),
    ("(loop [x 0] (recur (inc x)))", {"max_steps": 1000}, ptc.LimitExceeded, "limit_exceeded"),
    ("(+ 1 2)", {"policy": "nope"}, ptc.InvalidRequest, "invalid_request"),
]


@pytest.mark.parametrize("program,kw,exc,reason", CASES, ids=[c[3] for c in CASES])
def test_each_reason_raises_its_exception(client, program, kw, exc, reason):
    step = client.run(program, **kw)
    assert not step.ok and step.fail.system_reason == reason
    with pytest.raises(exc) as info:
        step.raise_for_fail()
    assert isinstance(info.value, ptc.PtcError)
    assert info.value.step is step and info.value.reason == step.fail.reason
    assert str(info.value) == f"{step.fail.reason}: {step.fail.message}"


def test_a_raising_tool_is_a_tool_error_with_its_message(client):
    def lookup(id):
        raise KeyError(f"no customer {id}")

    step = client.run("(tool/lookup {:id 7})", tools={"lookup": lookup})
    assert step.fail.reason == "tool_error" and "no customer 7" in step.fail.message
    with pytest.raises(ptc.ToolError):
        step.raise_for_fail()


def test_a_program_reason_is_shown_but_the_class_is_program_failed(client):
    step = client.run('(fail {:reason :not_found :message "no user 7"})')
    assert (step.fail.reason, step.fail.kind, step.fail.system_reason) == (
        "not_found", "program", "failed")
    with pytest.raises(ptc.ProgramFailed) as info:
        step.raise_for_fail()
    assert info.value.reason == "not_found"


def test_a_runner_that_never_becomes_ready_is_runner_crashed():
    step = ptc.Client.embedded(runner="/bin/true").run("(+ 1 2)")
    with pytest.raises(ptc.RunnerCrashed):
        step.raise_for_fail()


def test_a_cancelled_run_is_cancelled(client):
    got = []
    ready = threading.Event()

    def done(raw):
        got.append(raw)
        ready.set()

    handle = client._native.start(
        {"program": "(loop [] (recur))", "tools": [], "context": None, "memory": None,
         "signature": None, "timeout_ms": None, "max_steps": None, "policy": None},
        done,
    )
    handle.cancel()
    assert ready.wait(10)
    with pytest.raises(ptc.Cancelled):
        ptc.Step(got[0]).raise_for_fail()


def test_cancelling_an_arun_task_cancels_the_run(client):
    async def main():
        task = asyncio.ensure_future(client.arun("(loop [] (recur))"))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return await client.arun("(+ 1 2)")

    assert asyncio.run(main()).value == 3


def test_busy_from_a_full_daemon(daemon_factory):
    # The one slot is held by a run whose tool waits for the test, so the second run surely
    # finds it taken. (A spinning program raced the first quick run for the slot, and lost
    # whenever it was admitted second: then it was the Busy one and every quick run passed.)
    d = daemon_factory("per_uid_max = 1\nper_uid_queue = 0")
    client = ptc.Client.connect(d.socket)
    entered, release = threading.Event(), threading.Event()

    def hold():
        entered.set()
        release.wait(10)
        return 1

    held = []
    slow = threading.Thread(
        target=lambda: held.append(client.run("(tool/hold)", tools={"hold": hold})))
    slow.start()
    try:
        assert entered.wait(10), "the holding run reached its tool"
        with pytest.raises(ptc.Busy):
            client.run("(+ 1 2)").raise_for_fail()
    finally:
        release.set()
        slow.join()
    assert held[0].value == 1


def test_permission_denied_for_a_policy_this_uid_may_not_use(daemon_factory):
    d = daemon_factory(f'[policies_by_uid]\n"{os.getuid()}" = ["strict"]')
    client = ptc.Client.connect(d.socket)
    assert client.run("(+ 1 2)", policy="strict").value == 3
    with pytest.raises(ptc.PermissionDenied):
        client.run("(+ 1 2)", policy="default").raise_for_fail()


def test_every_reason_has_exactly_one_class():
    # The native list is ptc_shared::FailReason::ALL: a new reason fails here until it has one.
    assert sorted(ptc.BY_REASON) == sorted(_native.FAIL_REASONS)
    classes = list(ptc.BY_REASON.values())
    assert len(set(classes)) == len(classes)
    for reason, cls in ptc.BY_REASON.items():
        assert issubclass(cls, ptc.PtcError) and reason in cls.__doc__
