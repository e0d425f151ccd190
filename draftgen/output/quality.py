"""A dataset's data-quality report, counted one way from its typed records and rejects: the
generator's ledger (hence the manifest and the metrics) and `draftgen stats` and the export card
each add records to a `QualityCounts`, so the figures agree wherever they are shown.

- finish reasons as SGLang said them: `stop` and `length` from the records, `abort` from the
  rejects of samples whose last attempt the server aborted (`Reject.finish_reason`);
- truncation rate: `length` over samples (every length-finished record, never 0 by omission);
- thinking and tool-call shares: of the records whose reply facts were recorded
  (`meta.reply`, draftgen/output/reply_facts.py), None when none were;
- completion length mean and 95th percentile (nearest rank, exact: lengths are counted);
- chains ended early, by reason (the record's `meta.chain_end`, read by name: `CHAIN_END`);
- degenerate repetition: records flagged `meta.degenerate` (kept) plus `degenerate_repetition`
  rejects (dropped by `onDegenerate: drop`).

docs/quality.md describes each rule."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from draftgen.output.record import Record

__all__ = [
    "CHAIN_END",
    "DEGENERATE_REASON",
    "QualityCounts",
    "chain_end",
    "is_degenerate",
    "percentile",
    "reply_fact",
]

CHAIN_END = "chain_end"
"""The field of a record's `meta` that says why a chain ended at that record (the on-policy
chains write it on a chain's last record)."""
CHAIN_COMPLETE = "complete"
"""The `chain_end` of a chain that reached its conversation's last turn: not an early end."""

DEGENERATE_REASON = "degenerate_repetition"
"""The reject reason of a reply caught in a loop under `onDegenerate: drop`."""

ABORT = "abort"
FINISH_REASONS = ("stop", "length", ABORT)


def chain_end(record: Record) -> str | None:
    """Why the record's chain ended early at it (None: it did not end there, it completed, or
    the record is of no chain)."""
    end = None if record.meta is None else getattr(record.meta, CHAIN_END, None)
    return end if isinstance(end, str) and end and end != CHAIN_COMPLETE else None


def is_degenerate(record: Record) -> bool:
    """The record's reply was caught in a loop (`meta.degenerate` set)."""
    return record.meta is not None and record.meta.degenerate is not None


def reply_fact(record: Record, name: str) -> bool | None:
    """`meta.reply[name]` (None: the record carries no reply facts)."""
    reply = None if record.meta is None else record.meta.reply
    return bool(reply.get(name)) if isinstance(reply, dict) else None


def percentile(lengths: Counter, q: float) -> int | None:
    """The nearest-rank `q` percentile (0 < q <= 1) of the values counted in `lengths`: the
    smallest value with at least q of all values at or below it (None: nothing counted)."""
    n = sum(lengths.values())
    if n == 0:
        return None
    rank = max(1, math.ceil(q * n))
    seen = 0
    for value in sorted(lengths):
        seen += lengths[value]
        if seen >= rank:
            return int(value)
    return int(max(lengths))  # unreachable: the counts add up to n


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


@dataclass
class QualityCounts:
    """What a dataset's replies are like (see the module's docstring)."""

    finish_reasons: Counter = field(default_factory=Counter)
    lengths: Counter = field(default_factory=Counter)
    """Completion length → samples."""
    checked: int = 0
    """Samples whose reply facts were recorded (`meta.reply`)."""
    thinking: int = 0
    tool_calls: int = 0
    degenerate_kept: int = 0
    degenerate_dropped: int = 0
    chains_ended: Counter = field(default_factory=Counter)

    def add_outcome(self, finish_reason: str, completion_tokens: int) -> None:
        """One written sample, of a shape without reply facts (another tool's answer)."""
        self.finish_reasons[finish_reason] += 1
        self.lengths[completion_tokens] += 1

    def add_record(self, record: Record) -> None:
        """One written sample."""
        self.add_outcome(record.finish_reason, record.completion_tokens)
        self.add_facts(record)

    def add_facts(self, record: Record) -> None:
        """What a written sample's reply holds (its outcome counted by `add_outcome`)."""
        reasoning, tool = reply_fact(record, "reasoning"), reply_fact(record, "tool_call")
        if reasoning is not None or tool is not None:
            self.checked += 1
            self.thinking += bool(reasoning)
            self.tool_calls += bool(tool)
        self.degenerate_kept += is_degenerate(record)
        reason = chain_end(record)
        if reason is not None:
            self.chains_ended[reason] += 1

    def add_reject(self, reason: str, finish_reason: str | None = None) -> None:
        """One reject: an aborted generation or a loop dropped count here."""
        if finish_reason == ABORT:
            self.finish_reasons[ABORT] += 1
        if reason == DEGENERATE_REASON:
            self.degenerate_dropped += 1

    def merge(self, other: QualityCounts) -> None:
        self.finish_reasons.update(other.finish_reasons)
        self.lengths.update(other.lengths)
        self.chains_ended.update(other.chains_ended)
        self.checked += other.checked
        self.thinking += other.thinking
        self.tool_calls += other.tool_calls
        self.degenerate_kept += other.degenerate_kept
        self.degenerate_dropped += other.degenerate_dropped

    @property
    def samples(self) -> int:
        return sum(self.lengths.values())

    @property
    def truncated(self) -> int:
        return self.finish_reasons["length"]

    @property
    def truncation_rate(self) -> float:
        return self.truncated / self.samples if self.samples else 0.0

    @property
    def mean_completion(self) -> float:
        n = self.samples
        return sum(k * v for k, v in self.lengths.items()) / n if n else 0.0

    @property
    def p95_completion(self) -> int | None:
        return percentile(self.lengths, 0.95)

    @property
    def degenerate(self) -> int:
        """Replies caught in a loop, kept (flagged) or dropped (rejected)."""
        return self.degenerate_kept + self.degenerate_dropped

    def as_dict(self) -> dict[str, Any]:
        """The report (`quality` in `draftgen stats --json` and the dataset manifest)."""
        return {
            "finish_reasons": {r: self.finish_reasons[r] for r in FINISH_REASONS}
            | {r: n for r, n in sorted(self.finish_reasons.items()) if r not in FINISH_REASONS},
            "truncated": self.truncated,
            "truncation_rate": round(self.truncation_rate, 6),
            "replies_checked": self.checked,
            "thinking": self.thinking,
            "thinking_share": _share(self.thinking, self.checked),
            "tool_calls": self.tool_calls,
            "tool_call_share": _share(self.tool_calls, self.checked),
            "completion_tokens_mean": round(self.mean_completion, 2),
            "completion_tokens_p95": self.p95_completion,
            "chains_ended": dict(sorted(self.chains_ended.items())),
            "degenerate": self.degenerate,
            "degenerate_dropped": self.degenerate_dropped,
        }
