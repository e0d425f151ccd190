"""transformers prints "[transformers] PyTorch was not found ..." when a tokenizer loads without
torch (the CLI's venv and the image have none: draftgen only loads tokenizers). It appeared 1–4
times per command; `draftgen` silences it, for itself and the worker processes it starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo.yaml"
ADVICE = "PyTorch was not found"


def _run(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TRANSFORMERS_NO_ADVISORY_WARNINGS"}
    proc = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=300
    )
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def without_torch() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        return
    pytest.skip("torch is installed here: transformers gives no advice to silence")


def test_the_advice_appears_when_transformers_loads_a_tokenizer_alone(without_torch, tiny_kimi):
    """The check can fail: without draftgen's setting the advice is printed."""
    code = (
        f"from transformers import AutoTokenizer; AutoTokenizer.from_pretrained({str(tiny_kimi)!r})"
    )
    assert ADVICE in _run("-c", code)


@pytest.mark.parametrize(
    "command",
    [
        (["validate", "--local", "--tokenizer", str(DEMO)], "is valid"),
        (["preview", str(DEMO), "-n", "1"], "=== chat (messages) sample"),
    ],
    ids=["validate --tokenizer", "preview"],
)
def test_draftgen_commands_that_load_a_tokenizer_print_no_advice(without_torch, command):
    args, done = command
    out = _run("-m", "draftgen.cli", *args)
    assert done in out, out[-2000:]  # the tokenizer was loaded and used
    assert ADVICE not in out, out[-2000:]
