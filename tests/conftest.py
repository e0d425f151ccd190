"""Shared fixtures: where the repository and its examples are."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftgen.testing.sglang import SGLangServer

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def examples(repo: Path) -> Path:
    return repo / "examples"


# ---- a real SGLang server on the CPU, shared by every test of the session -----------------------

SGLANG_VENV = REPO / ".cache" / "venv-sglang"
TINY_KIMI = REPO / ".cache" / "models" / "tiny-kimi"
# Small enough that admission is genuinely KV-bound: requests queue exactly as on a GPU.
SGLANG_TEST_MAX_TOTAL_TOKENS = 4096


@pytest.fixture(scope="session")
def tiny_kimi() -> Path:
    if not (TINY_KIMI / "tokenizer.json").exists():
        pytest.skip(f"{TINY_KIMI} is missing: run `make models`")
    return TINY_KIMI


@pytest.fixture(scope="session")
def sglang_server(tiny_kimi: Path):
    """A tiny-kimi SGLang server (`.url`), started once per session and stopped at its end.
    DRAFTGEN_TEST_SGLANG_URL points the tests at an already running server instead."""
    import os

    url = os.environ.get("DRAFTGEN_TEST_SGLANG_URL")
    if url:

        class _External:
            pass

        server = _External()
        server.url = url.rstrip("/")
        yield server
        return
    if not (SGLANG_VENV / "bin" / "python").exists():
        pytest.skip(f"{SGLANG_VENV} is missing: run `make sglang`")
    with SGLangServer(tiny_kimi, max_total_tokens=SGLANG_TEST_MAX_TOTAL_TOKENS) as server:
        yield server
