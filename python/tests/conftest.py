"""Fixtures: one embedded client per test session, and real `ptc serve` daemons on temp sockets.

The daemon is the `ptc` binary of this build (`$PTC_BIN`, set by scripts/test-python.sh; else
`ptc` on PATH); its runner is the one the package ships (`ptc_sandbox.find_runner()`).
"""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import ptc_sandbox as ptc


@pytest.fixture(scope="session")
def client():
    return ptc.Client.embedded()


def _ptc_bin() -> str:
    found = os.environ.get("PTC_BIN") or shutil.which("ptc")
    if not found:
        pytest.fail("the daemon tests need `ptc`: set PTC_BIN (scripts/test-python.sh does)")
    return found


class Daemon:
    """A `ptc serve` process with its own config; stopped (SIGTERM) when the test ends."""

    def __init__(self, extra: str = "") -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ptc-py-"))
        self.socket = self.dir / "ptc.sock"
        config = self.dir / "ptc.toml"
        config.write_text(
            f'socket = "{self.socket}"\nrunner = "{ptc.find_runner()}"\n{extra}\n'
        )
        self.log = open(self.dir / "log", "wb")
        self.proc = subprocess.Popen(
            [_ptc_bin(), "serve", "--config", str(config)],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ptc serve exited: {(self.dir / 'log').read_text()}")
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(str(self.socket))
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("ptc serve never answered on its socket")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def daemon_factory():
    started = []

    def start(extra: str = "") -> Daemon:
        d = Daemon(extra)
        started.append(d)
        return d

    yield start
    for d in started:
        d.stop()


@pytest.fixture
def daemon(daemon_factory):
    return daemon_factory()
