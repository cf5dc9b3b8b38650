"""One client shared by many threads, and the GIL released while a run waits."""

import threading
from concurrent.futures import ThreadPoolExecutor

import ptc_sandbox as ptc


def test_many_threads_share_one_client(client):
    def one(i):
        step = client.run(
            "(+ data/i (tool/twice {:n data/i}))",
            context={"i": i},
            tools={"twice": lambda n: n * 2},
        )
        return step.raise_for_fail().value

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, range(40)))
    assert results == [3 * i for i in range(40)]


def test_other_threads_run_while_a_run_waits(client):
    # The program spins until its 300 ms timeout. With the GIL held for that time the counter
    # thread could not move; detached, it counts freely.
    stop = threading.Event()
    count = [0]

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = count[0]
        step = client.run("(loop [] (recur))", timeout_ms=300)
        during = count[0] - before
    finally:
        stop.set()
        t.join()
    assert step.fail.reason == "timeout"
    assert during > 1000, during


def test_a_tool_may_run_python_while_other_runs_proceed(client):
    barrier = threading.Barrier(2, timeout=10)

    def meet():
        # Two runs' tools meet here: both must be in Python at once, each on its own thread.
        barrier.wait()
        return True

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(client.run, "(tool/meet)", tools={"meet": meet}) for _ in range(2)]
        steps = [f.result() for f in futures]
    assert all(s.value is True for s in steps), steps


def test_clients_made_in_threads(client):
    with ThreadPoolExecutor(max_workers=4) as pool:
        clients = list(pool.map(lambda _: ptc.Client.embedded(), range(4)))
    assert [c.run("(* 6 7)").value for c in clients] == [42] * 4


def test_ctrl_c_interrupts_a_waiting_run():
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import sys, ptc_sandbox as ptc\n"
        "c = ptc.Client.embedded()\n"
        "c.run('(+ 1 2)')\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    step = c.run('(loop [] (recur))')\n"
        "    print('finished', step.fail and step.fail.reason, flush=True)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "print(c.run('(+ 1 2)').value, flush=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    # The run (at most the policy's 1 s) was cancelled by the signal, and the client still works.
    assert out.split() == ["interrupted", "3"], out
