"""Fixtures for the export tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from .builders import synthetic_records, write_output


@pytest.fixture
def output_dir(tmp_path: Path) -> Path:
    """Two datasets, one with truncated samples, in shards of four."""
    return write_output(
        tmp_path / "run",
        {
            "chat": synthetic_records("chat", 10, truncated_every=5),
            "code": synthetic_records("code", 7),
        },
        model="hf://moonshotai/Kimi-K2.5",
    )
