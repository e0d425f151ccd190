"""`draftgen top`'s targets, and `--once` on a directory (no terminal: one screen, exit 0)."""

from __future__ import annotations

import json
import re
import time

import pytest

from draftgen.cli import main
from draftgen.output.ledger import Ledger
from draftgen.spec import Budget
from draftgen.top.cli import TargetError, make_source
from draftgen.top.sources import ClusterSource, DirectorySource, MetricsSource, NoCluster


def test_targets(tmp_path, monkeypatch):
    assert isinstance(make_source("http://h:9400", "ns", []), MetricsSource)
    assert make_source("http://h:9400", "ns", []).url == "http://h:9400/metrics"  # type: ignore[attr-defined]
    assert isinstance(make_source(str(tmp_path), "ns", []), DirectorySource)
    assert isinstance(make_source(str(tmp_path / "not-yet"), "ns", []), DirectorySource)
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(TargetError):
        make_source(str(tmp_path / "f.txt"), "ns", [])
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(NoCluster):
        make_source("gj/kimi", "ns", [])
    assert ClusterSource.__name__  # gj/ targets are tested against the emulator


def test_once_on_a_directory_prints_the_manifest_figures(tmp_path, capsys, monkeypatch):
    # Piped output is 120 columns wide unless $COLUMNS says otherwise (pytest-xdist's workers
    # set it to 80, where the narrow layout leaves the prompt column out).
    monkeypatch.delenv("COLUMNS", raising=False)
    led = Ledger("chat", Budget(completion_tokens=1_000))
    for _ in range(4):
        led.add(50, 100, "stop")
    led.add(50, 100, "length")
    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {
                "datasets": {"chat": led.manifest().to_json()},
                "done": False,
                "updated_at": time.time(),
            }
        )
    )
    assert main(["top", str(tmp_path), "--once", "--interval", "0"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.lstrip().startswith("chat "))
    assert "500/1,000" in row and "250" in row and "20.0%" in row and " 50%" in row
    assert "NO DATA" not in out and "q or Ctrl-C" not in out


def test_once_on_a_directory_without_a_manifest_is_no_data(tmp_path, capsys):
    assert main(["top", str(tmp_path / "run"), "--once", "--interval", "0"]) == 0
    assert "NO DATA" in capsys.readouterr().out


def _manifest(directory, updated_at, done=False):
    led = Ledger("chat", Budget(completion_tokens=1_000))
    led.add(50, 100, "stop")
    (directory / "manifest.json").write_text(
        json.dumps(
            {"datasets": {"chat": led.manifest().to_json()}, "done": done, "updated_at": updated_at}
        )
    )


def _lease(directory, pid, heartbeat_at):
    import socket

    from draftgen.output.lock import LEASE_FILE

    lease = {"pid": pid, "host": socket.gethostname(), "nonce": "n", "heartbeat_at": heartbeat_at}
    (directory / LEASE_FILE).write_text(json.dumps(lease))


def _job_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("job "))


def test_a_manifest_not_rewritten_for_ten_minutes_is_a_stopped_job(tmp_path, capsys):
    """The generator's RFC 3339 `updated_at`, ten minutes old, while a lease looks alive."""
    import os

    from draftgen.timefmt import rfc3339

    _manifest(tmp_path, rfc3339(time.time() - 600))
    _lease(tmp_path, os.getpid(), time.time())
    assert main(["top", str(tmp_path), "--once", "--interval", "0"]) == 0
    out = capsys.readouterr().out
    assert _job_line(out).startswith("job STOPPED") and "job running" not in out
    assert re.search(r"manifest\.json was last written 60\d s ago", " ".join(out.split()))
    assert "ETA -" in out and "finish -" in out


def test_a_fresh_manifest_of_a_live_writer_is_running(tmp_path, capsys):
    import os

    from draftgen.timefmt import rfc3339

    _manifest(tmp_path, rfc3339())
    _lease(tmp_path, os.getpid(), time.time())
    assert main(["top", str(tmp_path), "--once", "--interval", "0"]) == 0
    out = capsys.readouterr().out
    assert _job_line(out).startswith("job running") and "STOPPED" not in out


def test_a_generator_killed_leaves_a_lease_whose_process_is_gone(tmp_path, capsys):
    """A real process holding the output's lock and lease, SIGKILLed: its manifest still says
    running and was written a second ago, but top says STOPPED and why."""
    import signal
    import subprocess
    import sys

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from draftgen.output.lock import OutputLock; "
            "OutputLock(__import__('pathlib').Path(sys.argv[1])).acquire(); "
            "print('held', flush=True); time.sleep(600)",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    from draftgen.timefmt import rfc3339

    _manifest(tmp_path, rfc3339())
    assert main(["top", str(tmp_path), "--once", "--interval", "0"]) == 0
    assert _job_line(capsys.readouterr().out).startswith("job running")
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert main(["top", str(tmp_path), "--once", "--interval", "0"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "job STOPPED" in out and "job running" not in out
    assert f"pid {holder.pid} on host" in out and "no longer runs (killed?)" in out


def test_an_unreadable_metrics_url_is_no_data_and_never_running(capsys):
    from draftgen.testing.sglang import free_port

    url = f"http://127.0.0.1:{free_port()}"
    assert main(["top", url, "--once", "--interval", "0"]) == 0
    out = capsys.readouterr().out
    assert "NO DATA from" in out
    assert _job_line(out).startswith("job state unknown") and "job running" not in out
