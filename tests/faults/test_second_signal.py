"""A second SIGTERM ends `draftgen generate` at once (issue #31, item 2): the first starts a clean
stop, which here cannot finish (a server that accepts `/generate` and `/abort_request` and
answers neither); the second exits with one line, 128 + the signal, no traceback. A real
process against a stand-in server (the real one always answers an abort)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .misbehaving import Misbehaving

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.yaml"


def _until(what: str, check, proc: subprocess.Popen, log: Path, bound: float = 240) -> None:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline and proc.poll() is None:
        if check():
            return
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"{what} never happened; log:\n{log.read_text()[-3000:]}")


def test_a_second_sigterm_exits_at_once_while_the_clean_stop_waits(tmp_path):
    log = tmp_path / "run.log"
    with Misbehaving("stall", abort_stalls=True) as server, open(log, "w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "draftgen.cli", "generate", str(DEMO), "--server",
             server.url, "--output", str(tmp_path / "out"), "--progress", "log"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            start_new_session=True,
        )  # fmt: skip
        try:
            _until("a /generate request", lambda: server.generate_calls, proc, log)
            proc.send_signal(signal.SIGTERM)
            _until("an abort of the requests in flight", lambda: server.aborts, proc, log)
            assert proc.poll() is None  # the clean stop waits for the server's answer
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    content = log.read_text()
    assert code == 128 + signal.SIGTERM, content
    assert content.count("received SIGTERM: stopping") == 1, content
    assert content.count("received SIGTERM again: exiting now") == 1, content
    assert "Traceback" not in content, content
