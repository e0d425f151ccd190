"""`draftgen top`'s targets, and `--once` on a directory (no terminal: one screen, exit 0)."""

from __future__ import annotations

import json
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


def test_once_on_a_directory_prints_the_manifest_figures(tmp_path, capsys):
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
