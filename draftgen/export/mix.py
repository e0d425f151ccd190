"""Per-dataset mix: how many copies of each sample an export carries.

`name=W` multiplies a dataset: W=0.5 keeps the half of its samples with the lowest id hash,
W=2 carries every sample twice, W=1.5 every sample once and half of them twice.
`name=tokens:N` keeps samples (in id-hash order) while their completion tokens fit in N.
Both choices depend only on ids and the seed, never on file order or time."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .records import ExportError
from .split import unit_hash


@dataclass(frozen=True, slots=True)
class MixRule:
    """One dataset's share of the export."""

    dataset: str
    weight: float | None = None
    """Copies per sample on average (0 drops the dataset)."""

    token_cap: int | None = None
    """Completion tokens at most from this dataset."""


def parse_mix(items: list[str] | None) -> dict[str, MixRule]:
    """`["chat=0.5", "code=tokens:1000000"]` → rules by dataset name."""
    rules: dict[str, MixRule] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise ExportError(f"--mix {item!r}: write NAME=WEIGHT or NAME=tokens:N, e.g. chat=0.5")
        if name in rules:
            raise ExportError(f"--mix: dataset {name!r} is given twice; give it once")
        if value.startswith("tokens:"):
            try:
                cap = int(value.removeprefix("tokens:").replace("_", ""))
            except ValueError:
                cap = -1
            if cap < 0:
                raise ExportError(f"--mix {item!r}: tokens:N needs a whole number N >= 0")
            rules[name] = MixRule(name, token_cap=cap)
        else:
            try:
                weight = float(value)
            except ValueError:
                weight = -1.0
            if not (weight >= 0 and math.isfinite(weight)):
                raise ExportError(
                    f"--mix {item!r}: the weight must be a number >= 0 (copies per sample), "
                    "or write tokens:N for a token cap"
                )
            rules[name] = MixRule(name, weight=weight)
    return rules


def copies_by_weight(sample_id: str, weight: float, seed: int) -> int:
    """Copies of one sample under a weight: the whole part always, one more for a stable
    fraction of ids."""
    whole = math.floor(weight)
    return whole + (1 if unit_hash(sample_id, seed, "mix") < weight - whole else 0)


def select_by_tokens(samples: list[tuple[str, int]], cap: int, seed: int) -> set[str]:
    """Ids kept under a completion-token cap: walk ids in hash order, keep each sample that
    still fits. `samples` is (id, completion_tokens)."""
    kept: set[str] = set()
    used = 0
    for sample_id, tokens in sorted(samples, key=lambda s: (unit_hash(s[0], seed, "mix"), s[0])):
        if used + tokens <= cap:
            kept.add(sample_id)
            used += tokens
    return kept
