"""`draftgen top` after a real `draftgen generate` (real CPU SGLang server) is SIGKILLed mid-job:
the output's manifest still says the job runs, but top says STOPPED (and why) on the directory,
and "state unknown" beside NO DATA on the dead generator's metrics URL; never "job running"."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from draftgen.cli import main
from draftgen.testing.sglang import free_port
from tests.generator.gen_helpers import CLI, generate_command, write_prompt_job
from tests.operator.harness import wait_for

pytestmark = pytest.mark.sglang


def _job_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("job "))


def test_top_after_a_sigkill_says_stopped_not_running(tmp_path, tiny_kimi, sglang_server, capsys):
    job = write_prompt_job(
        tmp_path,
        tiny_kimi,
        200,
        sampling={"maxNewTokens": 64},
        generator={"concurrency": {"mode": "fixed", "maxRequests": 2}},
    )
    out = tmp_path / "out"
    port = free_port()
    extra = ("--metrics-port", str(port))
    with open(tmp_path / "generator.log", "wb") as sink:
        gen = subprocess.Popen(
            [*CLI, *generate_command(job, out, sglang_server.url, extra=extra)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:

        def written() -> bool:
            try:
                data = json.loads((out / "manifest.json").read_text())
            except (OSError, ValueError):
                return False
            return data["datasets"]["p"]["samples"] > 0 and not data.get("done")

        wait_for(written, "a manifest with samples", timeout=300)
        assert main(["top", str(out), "--once", "--interval", "0"]) == 0
        assert _job_line(capsys.readouterr().out).startswith("job running")
    finally:
        gen.send_signal(signal.SIGKILL)
        gen.wait(timeout=60)
    assert json.loads((out / "manifest.json").read_text())["done"] is False

    args = ["top", str(out), "--server", sglang_server.url, "--once", "--interval", "0"]
    assert main(args) == 0
    screen = capsys.readouterr().out
    assert _job_line(screen).startswith("job STOPPED") and "job running" not in screen
    assert f"pid {gen.pid} on host" in " ".join(screen.split())
    assert "no longer runs (killed?)" in " ".join(screen.split())

    assert main(["top", f"http://127.0.0.1:{port}", "--once", "--interval", "0"]) == 0
    screen = capsys.readouterr().out
    assert "NO DATA from" in screen
    assert _job_line(screen).startswith("job state unknown") and "job running" not in screen
