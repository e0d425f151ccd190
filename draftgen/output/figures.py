"""One dataset's progress against its budget — the limit met, the share of the budget done, the
completion tokens left, the ETA at a rate — and their text, figured one way for the generator's
live progress (generator/telemetry/progress.py), `draftgen stats` (draftgen/commands/stats.py) and `draftgen top`
(draftgen/top/model.py). The tokens left follow the planner's rule, so a live ETA and the
plan's agree (draftgen/plan/eta.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from draftgen.output.counts import DatasetCounts
from draftgen.work import remaining_completion_tokens


class Limits(Protocol):
    """A budget's three limits (the spec's `Budget`, or a reading of one); None: no such limit."""

    @property
    def completion_tokens(self) -> int | None: ...

    @property
    def total_tokens(self) -> int | None: ...

    @property
    def max_samples(self) -> int | None: ...


@dataclass
class DatasetFigures(DatasetCounts):
    """What one dataset wrote, against its budget."""

    budget: Limits
    done: bool = False
    """Done for a reason the counts do not show (rows used up, the budget closed); a limit met
    makes the dataset finished whatever this says."""

    def limit_met(self) -> str | None:
        """The first limit reached (`completionTokens`, `totalTokens`, `maxSamples`), or None."""
        b = self.budget
        if b.completion_tokens is not None and self.completion_tokens >= b.completion_tokens:
            return "completionTokens"
        if b.total_tokens is not None and self.total_tokens >= b.total_tokens:
            return "totalTokens"
        if b.max_samples is not None and self.samples >= b.max_samples:
            return "maxSamples"
        return None

    @property
    def finished(self) -> bool:
        return self.done or self.limit_met() is not None

    def budget_fraction(self) -> float | None:
        """The nearest limit's share used, uncapped (1.03: 3% beyond it); None without one."""
        b = self.budget
        parts = []
        if b.completion_tokens:
            parts.append(self.completion_tokens / b.completion_tokens)
        if b.total_tokens:
            parts.append(self.total_tokens / b.total_tokens)
        if b.max_samples:
            parts.append(self.samples / b.max_samples)
        return max(parts) if parts else None

    def fraction_done(self) -> float | None:
        """Progress towards the nearest limit, 0–1 (None without a budget)."""
        frac = self.budget_fraction()
        return None if frac is None else min(1.0, frac)

    def remaining(self) -> float | None:
        """Completion tokens still to come before the nearest limit, by the planner's rule at the
        lengths measured so far (None: unknown)."""
        if self.finished:
            return 0.0
        b = self.budget
        return remaining_completion_tokens(
            b.completion_tokens,
            b.total_tokens,
            b.max_samples,
            self.mean_prompt if self.samples else None,
            self.mean_completion if self.samples else None,
            self.completion_tokens,
        )

    def eta(self, rate: float | None) -> float | None:
        """Seconds until the dataset is done at `rate` completion tokens/s (None: unknown)."""
        if self.finished:
            return 0.0
        left = self.remaining()
        return left / rate if left is not None and rate and rate > 0 else None


def job_eta(datasets: Iterable[DatasetFigures], rate: float | None) -> float | None:
    """Seconds until every dataset is done at `rate` tokens/s shared by all (None: unknown)."""
    if not rate or rate <= 0:
        return None
    left = 0.0
    for d in datasets:
        r = d.remaining()
        if r is None:
            return None
        left += r
    return left / rate


def budget_text(budget: Limits, counts: DatasetCounts | None = None) -> str:
    """`10,000 tok, 50 samples`; with `counts`, each against its limit: `7,500/10,000 tok`.
    Empty when the budget has no limit (the caller says what that means)."""
    parts = []
    for limit, unit, count in (
        (budget.completion_tokens, "tok", counts and counts.completion_tokens),
        (budget.total_tokens, "total", counts and counts.total_tokens),
        (budget.max_samples, "samples", counts and counts.samples),
    ):
        if limit is not None:
            parts.append(f"{limit:,} {unit}" if counts is None else f"{count:,}/{limit:,} {unit}")
    return ", ".join(parts)


def state_text(limit: str | None, closed: bool, exhausted: bool, otherwise: str) -> str:
    """Why a dataset is done, in the words `stats` and the progress log share: the limit it met,
    a budget that takes no more samples, its rows used up; `otherwise` while it is not done."""
    if limit is not None:
        return f"done ({limit})"
    if closed:
        return "done (budget full)"
    if exhausted:
        return "done (rows used up)"
    return otherwise
