"""`draftgen generate` while no server answers: it says what it waits for, fails at once on a
URL that is not SGLang's, and stops on the first SIGINT/SIGTERM with one line and no traceback
(the tokenizer workers included). Real processes; bounds are generous and never asserted as
durations."""

from __future__ import annotations

import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from draftgen.generator.sglang.health import Probe, verdict

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo.yaml"


def test_verdicts_keep_waiting_on_loading_and_fail_on_wrong_answers():
    url = "http://h:30000"
    refused = Probe(None, "ConnectionRefusedError: [Errno 111] Connection refused")
    assert verdict(url, refused)[0] == "waiting" and "refused" in verdict(url, refused)[1]
    assert verdict(url, Probe(503))[0] == "waiting"
    assert verdict(url, Probe(200)) == ("ready", f"{url} is ready")
    state, why = verdict(url + "/v1", Probe(404))
    assert state == "wrong" and "404" in why and "remove the path" in why
    assert verdict(url, Probe(401, body="unauthorized"))[0] == "wrong"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "draftgen.cli", "generate", str(DEMO), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own group: a terminal's Ctrl-C reaches every process
        )


def _wait_for_line(log: Path, text: str, proc: subprocess.Popen, bound: float = 240) -> str:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        content = log.read_text()
        if text in content:
            return content
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    proc.kill()
    pytest.fail(f"{text!r} never appeared; log:\n{log.read_text()}")


def _ended(proc: subprocess.Popen, bound: float = 60) -> int:
    try:
        return proc.wait(timeout=bound)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail("still running long after the signal")


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT-to-the-group"])
def test_a_refused_server_is_named_and_a_signal_stops_the_wait(tmp_path, how):
    url = f"http://127.0.0.1:{_closed_port()}"
    log = tmp_path / "run.log"
    proc = _start(["--server", url, "--output", str(tmp_path / "out"), "--progress", "log"], log)
    content = _wait_for_line(log, "connection refused", proc)
    assert f"waiting for {url}" in content and "may still be loading" in content
    if how == "SIGTERM":
        proc.send_signal(signal.SIGTERM)
        expected = 143
    else:  # Ctrl-C at a terminal: the generator and its tokenizer workers all receive it
        os.killpg(proc.pid, signal.SIGINT)
        expected = 130
    assert _ended(proc) == expected
    content = log.read_text()
    assert "Traceback" not in content and "KeyboardInterrupt" not in content, content
    assert content.count("stopping") == 1


class _NotSGLang(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(404)
        self.end_headers()
        self.wfile.write(b'{"detail":"Not Found"}')

    def log_message(self, *args):
        pass


def test_a_404_fails_at_once_with_the_fix(tmp_path):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotSGLang)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        log = tmp_path / "run.log"
        proc = _start(
            ["--server", url, "--output", str(tmp_path / "out"), "--progress", "log"], log
        )
        code = _ended(proc, bound=240)  # far below the 1800 s health timeout it waited before
    finally:
        httpd.shutdown()
    content = log.read_text()
    assert code == 2, content
    assert "HTTP 404" in content and "remove the path after host:port" in content
    assert "Traceback" not in content
