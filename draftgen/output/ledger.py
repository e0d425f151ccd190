"""Per-dataset ledger: what was written (this run and every earlier one) against the budget."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from draftgen.output.counts import DatasetCounts
from draftgen.output.figures import DatasetFigures
from draftgen.output.manifest import DatasetManifest
from draftgen.output.quality import QualityCounts
from draftgen.output.record import Record
from draftgen.spec import Budget
from draftgen.timefmt import rfc3339


@dataclass
class Ledger(DatasetCounts):
    """Counts of one dataset's written records and rejects. Built from the shards on resume
    (the records are the truth), then updated as each record is written."""

    dataset: str
    budget: Budget
    finish_reasons: Counter = field(default_factory=Counter)
    completion_by_reason: Counter = field(default_factory=Counter)
    rejects: Counter = field(default_factory=Counter)
    tool_fallbacks: int = 0
    """Samples whose tools the tokenizer declared in a fallback form (`meta.sample.tool_fallback`)."""
    quality: QualityCounts = field(default_factory=QualityCounts)
    """The data-quality report's counts (draftgen/output/quality.py)."""
    exhausted: bool = False
    """Every input row was used (or refused)."""
    closed: bool = False
    """The budget cannot take one more sample (less than one predicted sample left)."""

    def add(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        finish_reason: str,
        tool_fallback: bool = False,
    ) -> None:
        self.count(prompt_tokens, completion_tokens)
        self.tool_fallbacks += tool_fallback
        self.finish_reasons[finish_reason] += 1
        self.completion_by_reason[finish_reason] += completion_tokens
        self.quality.add_outcome(finish_reason, completion_tokens)

    def add_record(self, record: Record) -> None:
        """Count a record as written (the one call the run makes per record)."""
        self.add(
            record.prompt_tokens,
            record.completion_tokens,
            record.finish_reason,
            record.tool_fallback,
        )
        self.quality.add_facts(record)

    def add_reject(self, reason: str, finish_reason: str | None = None) -> None:
        self.rejects[reason] += 1
        self.quality.add_reject(reason, finish_reason)

    def figures(self) -> DatasetFigures:
        """The counts against the budget, figured as `draftgen stats` and `draftgen top` do."""
        return DatasetFigures(
            budget=self.budget,
            samples=self.samples,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            done=self.exhausted or self.closed,
        )

    def limit_met(self) -> str | None:
        """The first budget limit reached (`completionTokens`, `totalTokens`, `maxSamples`)."""
        return self.figures().limit_met()

    @property
    def budget_met(self) -> bool:
        return self.limit_met() is not None

    @property
    def done(self) -> bool:
        return self.budget_met or self.exhausted or self.closed

    @property
    def remaining_completion_tokens(self) -> int | None:
        if self.budget.completion_tokens is None:
            return None
        return self.budget.completion_tokens - self.completion_tokens

    @property
    def overshoot_completion_tokens(self) -> int:
        remaining = self.remaining_completion_tokens
        return 0 if remaining is None else max(0, -remaining)

    @property
    def overshoot_percent(self) -> float:
        if not self.budget.completion_tokens:
            return 0.0
        return 100.0 * self.overshoot_completion_tokens / self.budget.completion_tokens

    @property
    def overshoot_samples(self) -> int:
        """Samples beyond `maxSamples` (a budget lowered below what was already written)."""
        b = self.budget.max_samples
        return 0 if b is None else max(0, self.samples - b)

    @property
    def truncation_rate(self) -> float:
        return self.finish_reasons["length"] / self.samples if self.samples else 0.0

    def fraction_done(self) -> float | None:
        """Progress towards the nearest limit, 0–1 (None without a budget)."""
        return self.figures().fraction_done()

    def manifest(self) -> DatasetManifest:
        """This dataset's `manifest.json` (docs/output-format.md)."""
        return DatasetManifest(
            dataset=self.dataset,
            samples=self.samples,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            finish_reasons={
                "stop": self.finish_reasons["stop"],
                "length": self.finish_reasons["length"],
                "abort": self.quality.finish_reasons["abort"],
            },
            truncation_rate=round(self.truncation_rate, 6),
            rejects=sum(self.rejects.values()),
            tool_fallbacks=self.tool_fallbacks,
            budget=self.budget.model_dump(by_alias=True),
            overshoot_completion_tokens=self.overshoot_completion_tokens,
            overshoot_percent=round(self.overshoot_percent, 4),
            overshoot_samples=self.overshoot_samples,
            done=self.done,
            exhausted=self.exhausted,
            updated_at=rfc3339(),
            quality=self.quality.as_dict(),
        )
