"""Fixtures of the operator tests (the harness behind them: tests/operator/harness.py)."""

from .harness import cluster, emulator, operator, set_operator_test_env  # noqa: F401  (fixtures)


def pytest_configure(config) -> None:
    set_operator_test_env()
