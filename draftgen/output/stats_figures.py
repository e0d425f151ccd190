"""`draftgen stats`' figures of one dataset (`DatasetStats`: the counts read from its records,
the budget and state its manifests record, and what follows from them) and of the whole job
(`total`). The share of the budget and the state are figured as the generator's progress and
`draftgen top` figure them (draftgen/output/figures.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from draftgen.output.chain_counts import ChainCounts
from draftgen.output.counts import DatasetCounts
from draftgen.output.figures import DatasetFigures, state_text
from draftgen.output.ledger import Ledger
from draftgen.output.quality import QualityCounts
from draftgen.spec import Budget


@dataclass
class DatasetStats(DatasetCounts):
    name: str
    truncated: int = 0
    rejects: int = 0
    unreadable: int = 0
    shapes: set[str] = field(default_factory=set)
    rejects_by_reason: Counter = field(default_factory=Counter)
    budget: Budget | None = None
    """From the dataset's manifest (None: no manifest, e.g. older data)."""
    done: bool | None = None
    exhausted: bool | None = None
    torn_shards: list[str] = field(default_factory=list)
    """Shards whose last line is a write cut short (not counted, as resume drops it)."""
    chains: ChainCounts = field(default_factory=ChainCounts)
    """`history: regenerated`: how far the chains got (`chain_counts.py`)."""
    first_at: float | None = None
    last_at: float | None = None
    """Write times of the first and last record (`meta.created_at`)."""
    quality: QualityCounts = field(default_factory=QualityCounts)
    """The data-quality report (draftgen/output/quality.py)."""
    by_rank: dict[int, DatasetCounts] = field(default_factory=dict)
    """Samples and tokens per data-parallel rank of the server (the records' `meta.dp_rank`;
    empty when no server had several ranks)."""

    @property
    def truncation_rate(self) -> float:
        return self.truncated / self.samples if self.samples else 0.0

    def ledger(self) -> Ledger | None:
        """The counts as the generator's ledger (its budget rules), when the budget is known."""
        if self.budget is None:
            return None
        led = Ledger(self.name, self.budget)
        led.samples, led.prompt_tokens = self.samples, self.prompt_tokens
        led.completion_tokens = self.completion_tokens
        led.finish_reasons["length"] = self.truncated
        led.finish_reasons["stop"] = self.samples - self.truncated
        led.exhausted = bool(self.exhausted)
        return led

    def _figures(self, budget: Budget) -> DatasetFigures:
        return DatasetFigures(
            budget=budget,
            samples=self.samples,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )

    @property
    def budget_fraction(self) -> float | None:
        """The nearest limit's share used, uncapped (1.03: 3% beyond it); None without one."""
        return None if self.budget is None else self._figures(self.budget).budget_fraction()

    @property
    def throughput(self) -> float | None:
        """Completion tokens/s from the first record to the last (stops in between count)."""
        if self.first_at is None or self.last_at is None or self.last_at <= self.first_at:
            return None
        return self.completion_tokens / (self.last_at - self.first_at)

    def state(self) -> str:
        limit = None if self.budget is None else self._figures(self.budget).limit_met()
        exhausted = bool(self.exhausted)  # the manifest's `done` covers rows used up too
        closed = bool(self.done) and not exhausted
        return state_text(limit, closed, exhausted, "-" if self.done is None else "not done")

    def as_dict(self) -> dict[str, Any]:
        led = self.ledger()
        frac = self.budget_fraction
        return {
            "dataset": self.name,
            "state": self.state(),
            "done": self.done,
            "exhausted": self.exhausted,
            "budget": None if self.budget is None else budget_dict(self.budget),
            "budget_percent": None if frac is None else round(100 * frac, 3),
            "limit_met": None if led is None else led.limit_met(),
            "samples": self.samples,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "mean_prompt_tokens": round(self.mean_prompt, 2),
            "mean_completion_tokens": round(self.mean_completion, 2),
            "overshoot_completion_tokens": None if led is None else led.overshoot_completion_tokens,
            "overshoot_percent": None if led is None else round(led.overshoot_percent, 4),
            "overshoot_samples": None if led is None else led.overshoot_samples,
            "throughput_tokens_per_second": _round(self.throughput, 3),
            "truncated": self.truncated,
            "truncation_rate": round(self.truncation_rate, 6),
            "rejects": self.rejects,
            "by_rank": {
                str(rank): {
                    "samples": c.samples,
                    "prompt_tokens": c.prompt_tokens,
                    "completion_tokens": c.completion_tokens,
                }
                for rank, c in sorted(self.by_rank.items())
            },
            "rejects_by_reason": dict(sorted(self.rejects_by_reason.items())),
            "chains": self.chains.to_json() if self.chains.started else None,
            "quality": self.quality.as_dict(),
            "unreadable_lines": self.unreadable,
            "torn_shards": list(self.torn_shards),
            "shapes": sorted(self.shapes),
        }


def budget_dict(budget: Budget) -> dict[str, int]:
    return budget.model_dump(by_alias=True, exclude_none=True)


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def total(stats: list[DatasetStats]) -> DatasetStats:
    """The job's sum; its budget is the sum of the completion-token budgets when every dataset
    has one."""
    t = DatasetStats(
        "TOTAL",
        samples=sum(s.samples for s in stats),
        prompt_tokens=sum(s.prompt_tokens for s in stats),
        completion_tokens=sum(s.completion_tokens for s in stats),
        truncated=sum(s.truncated for s in stats),
        rejects=sum(s.rejects for s in stats),
        unreadable=sum(s.unreadable for s in stats),
    )
    for s in stats:
        t.rejects_by_reason.update(s.rejects_by_reason)
        t.quality.merge(s.quality)
        t.torn_shards += [f"{s.name}/{n}" for n in s.torn_shards]
    budgets = [s.budget.completion_tokens if s.budget else None for s in stats]
    if stats and all(budgets):
        t.budget = Budget(completion_tokens=sum(b or 0 for b in budgets))
    if stats and all(s.done is not None for s in stats):
        t.done = all(s.done for s in stats)
    starts = [s.first_at for s in stats if s.first_at is not None]
    ends = [s.last_at for s in stats if s.last_at is not None]
    t.first_at = min(starts) if starts else None
    t.last_at = max(ends) if ends else None
    return t
