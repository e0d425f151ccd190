"""Fixtures of the `draftgen top` tests: the operator's emulator harness for a GenerationJob."""

from __future__ import annotations

from tests.operator.harness import cluster, emulator, operator, set_operator_test_env  # noqa: F401


def pytest_configure(config) -> None:
    set_operator_test_env()  # before a test module here imports the operator's handlers
