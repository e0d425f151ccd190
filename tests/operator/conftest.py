"""Fixtures of the operator tests (the harness behind them: tests/operator/harness.py)."""

from .harness import cluster, emulator, operator  # noqa: F401  (fixtures)
