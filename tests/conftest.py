"""Shared fixtures: where the repository and its examples are."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def examples(repo: Path) -> Path:
    return repo / "examples"
