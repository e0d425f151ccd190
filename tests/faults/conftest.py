"""Fixtures of the fault-injection suite: the input side's offline tokenizer. (The operator's
emulator harness is tests.operator.harness, imported by the tests that use it.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.generator_input.tokenizer_fixture import KIMI_LIKE, build_tokenizer
from tests.operator.harness import set_operator_test_env


def pytest_configure(config) -> None:
    set_operator_test_env()  # before a test module here imports the operator's handlers


@pytest.fixture(scope="session")
def kimi_like_tokenizer(tmp_path_factory) -> Path:
    """The input-side tests' byte-level Kimi-like tokenizer (Kimi's special ids, tool_declare)."""
    return build_tokenizer(tmp_path_factory.mktemp("tok") / "kimi-like", KIMI_LIKE)
