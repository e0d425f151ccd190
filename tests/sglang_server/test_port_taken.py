"""A port another process holds. SGLang binds its HTTP port last, after the model load, and on
failure stays up serving nothing: `draftgen serve` and `generate --serve` refuse a taken port
before starting anything, and the test launcher picks another port when its own was taken
during the load (on a busy machine, by anyone's outgoing connection)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.sglang_port import BIND_FAILED
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


@pytest.mark.sglang
@pytest.mark.timeout(1200)  # two model loads on a shared CPU
def test_a_port_taken_while_the_server_loads_is_picked_again(tiny_kimi):
    server = SGLangServer(tiny_kimi, max_total_tokens=1024)
    server.start(wait=False)
    taken = server.port
    try:
        with listening(taken):  # taken after the start, before SGLang binds it
            server.wait_healthy()
        assert server.port != taken and server.healthy()
        assert server.log_path is not None
        log = server.log_path.read_text()
        assert f"('127.0.0.1', {taken})" in log and BIND_FAILED in log  # the real failure
    finally:
        server.stop()
