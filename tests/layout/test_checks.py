"""The checks engineers run on their own machines pass here too: ruff (lint and format), mypy and
the layer contracts (import-linter: layers, and no import cycle at any depth), with the
configuration in pyproject.toml. A failure prints the tool's own findings."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        found = shutil.which(name)
        if found is None:
            pytest.fail(f"{name} is not installed: `make venv` installs the lint extra")
        return found
    return str(path)


def _run(repo: Path, *argv: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(argv, cwd=repo, capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"{' '.join(argv)} failed:\n{done.stdout}{done.stderr}"


def test_ruff_lint_passes(repo):
    _run(repo, _tool("ruff"), "check", "--no-cache", ".")


def test_ruff_format_is_applied(repo):
    _run(repo, _tool("ruff"), "format", "--check", "--no-cache", ".")


def test_mypy_passes(repo):
    _run(repo, _tool("mypy"))  # its cache is pyproject's (.cache/mypy, warmed by `make setup`)


def test_import_contracts_hold(repo):
    # The tree at hand, not whichever checkout the environment's editable install points at.
    env = {**os.environ, "PYTHONPATH": str(repo)}
    _run(repo, _tool("lint-imports"), "--no-cache", env=env)
