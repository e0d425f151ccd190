"""The rate model of the generator's progress: completion tokens per second over a sliding
window, and the ETA it gives (the tokens left by the planner's rule, draftgen/output/figures.py)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence

from draftgen.output.figures import job_eta
from draftgen.output.ledger import Ledger


class RateMeter:
    """Tokens per second over a sliding window."""

    def __init__(self, window: float = 60.0) -> None:
        self.window = window
        self._events: deque[tuple[float, int]] = deque()
        self._start = time.monotonic()

    def add(self, tokens: int, now: float | None = None) -> None:
        self._events.append((time.monotonic() if now is None else now, tokens))

    def rate(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        while self._events and self._events[0][0] < now - self.window:
            self._events.popleft()
        span = min(self.window, now - self._start)
        if span <= 0.5:
            return 0.0
        return sum(n for _, n in self._events) / span


def remaining_tokens(ledger: Ledger) -> float | None:
    """Completion tokens still to generate before the dataset's nearest limit (None: unknown),
    by the planner's rule (draftgen/plan/eta.py) at the lengths measured so far."""
    return ledger.figures().remaining()


def eta_seconds(ledgers: Sequence[Ledger], rate: float) -> float | None:
    """Seconds until every budget is met at `rate` tokens/s (None when unknown)."""
    return job_eta((ledger.figures() for ledger in ledgers), rate)
