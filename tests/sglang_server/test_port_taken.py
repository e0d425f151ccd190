"""A port another process holds. SGLang binds its HTTP port last, after the model load, and on
failure stays up serving nothing: `draftgen serve` and `generate --serve` refuse a taken port
before starting anything, and the test launcher picks another port when its own was taken
during the load (on a busy machine, by anyone's outgoing connection). A real server's start that
loses its port costs two model loads (~3 minutes here beside the suite), so the log rule is
checked on a real server's log lines instead."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from draftgen.contract.generator_cli import ExitCode
from draftgen.serving import ServerProcess
from draftgen.testing.sglang import SGLangServer, free_port

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo.yaml"


@contextmanager
def listening(port: int) -> Iterator[socket.socket]:
    """Another process's server on `port` (SO_REUSEADDR, as uvicorn binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
        yield s


@pytest.mark.parametrize(
    "command",
    [["serve", str(DEMO)], ["generate", str(DEMO), "--serve", "--output", "{out}"]],
    ids=["serve", "generate --serve"],
)
def test_a_taken_port_is_refused_before_sglang_starts(command, tmp_path):
    port = free_port()
    args = [a.replace("{out}", str(tmp_path / "out")) for a in command]
    with listening(port):
        run = subprocess.run(
            [sys.executable, "-m", "draftgen.cli", *args, "--cpu", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.returncode == ExitCode.SERVERS_DOWN, run.stderr[-3000:]
    assert f"port {port} is taken" in run.stderr and "--port N" in run.stderr
    assert "serving" not in run.stderr and "starting SGLang" not in run.stderr
    assert not (tmp_path / "out.sglang.log").exists()  # nothing was started


def test_the_launchers_ports_are_below_the_ephemeral_range():
    """Where outgoing connections never take them meanwhile."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert all(1024 <= free_port() < low for _ in range(20))


# The lines a real SGLang 0.5.23 server logged when its port was taken during the load (a
# fresh-clone `make test` here; the process then stayed up 12 minutes serving nothing).
REAL_BIND_FAILURE = """\
[2026-12-03 14:58:02] INFO:     Application startup complete.
[2026-12-03 14:58:02] ERROR:    [Errno 98] error while attempting to bind on address \
('127.0.0.1', 46773): address already in use
[2026-12-03 14:58:02] INFO:     Waiting for application shutdown.
"""


def test_generate_serve_sees_its_server_fail_to_bind_in_its_log(tmp_path):
    """What `generate --serve` watches: the log from this start on (an earlier start's failure,
    above it in the appended log, is not this one's)."""
    log = tmp_path / "out.sglang.log"
    log.write_text(REAL_BIND_FAILURE)  # an earlier start's
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)", "--port", str(free_port())]
    server = ServerProcess(sleeper, {}, log=log)
    try:
        assert not server.bind_failed()
        with open(log, "a") as f:
            f.write(REAL_BIND_FAILURE)
        assert server.bind_failed()
    finally:
        server.stop(grace=1)


def test_the_test_launcher_sees_its_server_fail_to_bind_in_its_log(tmp_path):
    server = SGLangServer(tmp_path, log_path=tmp_path / "sglang.log")
    server.log_path.write_text(REAL_BIND_FAILURE)  # before this start: not this start's
    server._log_start = server.log_path.stat().st_size
    assert not server._bind_failed()
    with open(server.log_path, "a") as f:
        f.write(REAL_BIND_FAILURE)
    assert server._bind_failed()
