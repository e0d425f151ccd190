"""Fixtures of the fault-injection suite: the input side's offline tokenizer, and the
operator's emulator harness reused from tests/operator (loaded by path, not copied)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent

# The operator's harness: its conftest sets the operator's env (short poll interval, no metrics
# port) before the handlers module is imported. Load it under another name so pytest does not
# mistake it for this directory's conftest. This copy has its own kubeconfig path
# (`harness._KUBECONFIG`): the emulators here write it and its `running_operator` reads it.
_spec = importlib.util.spec_from_file_location("draftgen_operator_harness",
                                               TESTS / "operator" / "conftest.py")
harness = importlib.util.module_from_spec(_spec)
sys.modules["draftgen_operator_harness"] = harness
_spec.loader.exec_module(harness)


@pytest.fixture(scope="session")
def kimi_like_tokenizer(tmp_path_factory) -> Path:
    """The input-side tests' byte-level Kimi-like tokenizer (Kimi's special ids, tool_declare)."""
    sys.path.insert(0, str(TESTS))
    from generator_input.tokenizer_fixture import KIMI_LIKE, build_tokenizer

    return build_tokenizer(tmp_path_factory.mktemp("tok") / "kimi-like", KIMI_LIKE)
