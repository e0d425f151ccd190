"""What one dataset wrote, counted one way: the counts the ledger (the generator's), `draftgen
stats`, `draftgen top`, the budget figures and `draftgen export` each build on (`DatasetCounts`,
which each of their per-dataset types extends), so a count added or renamed is one change here.

Not built on it, and why: the generator's `/metrics` page reading (draftgen/contract/metrics.py
`DatasetSeries`) is the contract between processes, below this package; the GenerationJob's
status (draftgen/spec/status.py `DatasetProgress`) is the CRD's pydantic schema (camelCase)."""

from __future__ import annotations

from dataclasses import dataclass

from draftgen.output.record import Record

__all__ = ["DatasetCounts"]


@dataclass(kw_only=True)
class DatasetCounts:
    """Samples written and their tokens."""

    samples: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def count(self, prompt_tokens: int, completion_tokens: int) -> None:
        """One more sample."""
        self.samples += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens

    def count_record(self, record: Record) -> None:
        self.count(record.prompt_tokens, record.completion_tokens)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def mean_prompt(self) -> float:
        return self.prompt_tokens / self.samples if self.samples else 0.0

    @property
    def mean_completion(self) -> float:
        return self.completion_tokens / self.samples if self.samples else 0.0
