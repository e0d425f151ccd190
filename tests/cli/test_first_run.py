"""docs/first-run.md shows what `draftgen validate` prints for its job file: still true."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _block_after(text: str, marker: str) -> str:
    return text.split(marker, 1)[1].split("```", 2)[1].strip("\n").removeprefix("yaml\n")


def test_the_first_runs_validate_output_is_what_validate_prints(tmp_path):
    doc = (REPO / "docs" / "first-run.md").read_text()
    job = _block_after(doc, "The five mistakes:")
    (tmp_path / "kimi.yaml").write_text(job.split("\n", 1)[1] + "\n")  # without `# kimi.yaml`
    run = subprocess.run(
        [sys.executable, "-m", "draftgen.cli", "validate", "kimi.yaml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    printed = (run.stdout + run.stderr).rstrip() + f"\n(exit {run.returncode})"
    assert printed == _block_after(doc, "## `draftgen validate kimi.yaml`")
