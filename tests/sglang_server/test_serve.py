"""`draftgen serve JOB` and `draftgen generate JOB --serve`: SGLang started with the operator's own
arguments for the job (the CPU flags added by the documented `--cpu` override), stopped with its
children on SIGTERM; the demo job generated end to end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from draftgen.launch.server_argv import server_args
from draftgen.spec import load_job_document
from draftgen.testing.sglang import CPU_FLAGS, free_port

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo.yaml"
KV = "--server-arg=--max-total-tokens=4096"


def _draftgen(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "draftgen.cli", *args],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        **kwargs,
    )


def test_serve_runs_the_operators_arguments(capsys):
    from draftgen.cli import main

    assert main(["serve", str(DEMO), "--cpu", "--port", "31234", KV, "--print"]) == 0
    printed = capsys.readouterr().out.split()
    job, document = load_job_document(str(DEMO))
    rendered = server_args(job.spec)
    rendered[rendered.index("--model-path") + 1] = str((REPO / ".cache/models/tiny-kimi").resolve())
    rendered[rendered.index("--port") + 1] = "31234"
    launched = printed[printed.index("sglang.launch_server") + 1 :]
    assert launched[: len(rendered)] == rendered  # the operator's, in its order
    extra = launched[len(rendered) :]
    assert extra[-1] == "--max-total-tokens=4096"
    assert set(extra[:-1]) <= set(CPU_FLAGS)


def _get(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.loads(r.read() or b"{}") if r.status == 200 else None
    except (OSError, ValueError):
        return None


def _gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.sglang
@pytest.mark.long
def test_serve_starts_the_job_server_and_sigterm_stops_it_and_its_children(tmp_path):
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = _draftgen(
            "serve", str(DEMO), "--cpu", "--port", str(port), KV,
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 400
        while _get(url + "/health_generate") is None:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "not healthy: " + log.read_text()[-3000:]
            time.sleep(1)
        info = _get(url + "/get_server_info")
        assert info is not None and info["schedule_conservativeness"] == 0.1
        assert info["enable_metrics"] is True and info["mem_fraction_static"] == 0.8
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 143
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text()
    assert "received SIGTERM: stopping the SGLang server" in text
    assert _get(url + "/health") is None  # nothing answers there any more


@pytest.mark.sglang
@pytest.mark.long
def test_generate_serve_runs_the_demo_and_stops_the_server(tmp_path):
    out = tmp_path / "demo"
    port = free_port()
    run = subprocess.run(
        [sys.executable, "-m", "draftgen.cli", "generate", str(DEMO), "--serve", "--cpu",
         "--port", str(port), "--server-arg=--max-total-tokens=8192", "--output", str(out),
         "--progress", "log"],
        capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-4000:]
    assert "starting SGLang" in run.stderr and "stopping the SGLang server" in run.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest  # the records' summary
    assert sum(1 for _ in out.glob("*/shard-*.jsonl")) >= 3
    assert (tmp_path / "demo.sglang.log").exists()
    assert _get(f"http://127.0.0.1:{port}/health") is None
