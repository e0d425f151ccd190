"""How far a dataset's chains (`history: regenerated`) got, counted from its records in one pass
and constant memory: every chain writes its turn 0 first (`meta.chain.turns`: the turns the
conversation asks for) and puts `meta.chain_end` on its last record only, so chains started,
turns asked and written, and ends by reason are plain counts; a chain started with no end was
cut by the budget or a stop (or is still running)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

CUT = "cut"
"""The reason shown for chains with no `chain_end`: stopped by the budget or the run."""


@dataclass
class ChainCounts:
    started: int = 0
    turns_asked: int = 0
    """Assistant turns the started chains' conversations ask for."""
    turns_written: int = 0
    ends: Counter = field(default_factory=Counter)
    """Chains by why they ended (`meta.chain_end`)."""

    def count(self, rec: dict[str, Any]) -> None:
        """Count one record (any record: those of no chain are left out)."""
        meta = rec.get("meta")
        chain = meta.get("chain") if isinstance(meta, dict) else None
        if not isinstance(chain, dict):
            return
        self.turns_written += 1
        turns = chain.get("turns")
        if rec.get("turn") == 0:
            self.started += 1
            self.turns_asked += turns if type(turns) is int else 0
        end = meta.get("chain_end") if isinstance(meta, dict) else None
        if isinstance(end, str):
            self.ends[end] += 1

    @property
    def by_end(self) -> dict[str, int]:
        """Chains by end reason, those with none as `cut`."""
        out = dict(sorted(self.ends.items()))
        cut = self.started - sum(self.ends.values())
        if cut > 0:
            out[CUT] = cut
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "turns_asked": self.turns_asked,
            "turns_written": self.turns_written,
            "by_end": self.by_end,
        }

    def text(self) -> str:
        share = f" ({100 * self.turns_written / self.turns_asked:.0f}%)" if self.turns_asked else ""
        ends = ", ".join(f"{k} {v:,}" for k, v in self.by_end.items())
        return (
            f"{self.started:,} chains, {self.turns_written:,} of {self.turns_asked:,} turns"
            f"{share}; ended: {ends}"
        )
