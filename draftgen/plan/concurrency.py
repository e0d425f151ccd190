"""How many requests decode at once, and the throughput that allows.

Generation for a drafter is KV-bound: every running request holds its prompt plus what it has
generated in the KV pool, so `max_total_num_tokens / mean sequence` requests decode at once and
the rest queue. At Kimi-K2.5's 159,277 tokens and 4,000-token sequences that is ~40 decodes; at
~17 tokens/s each, ~680 tokens/s — what was observed. More client concurrency cannot beat it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

LengthSource = Literal["dataset", "job", "command line", "unknown"]

# An observed rate this close to the ceiling means the server runs every decode that fits.
AT_CEILING = 0.85


@dataclass(frozen=True)
class DatasetLengths:
    """Mean request lengths of one dataset and where they came from."""

    name: str
    prompt_tokens: int | None
    completion_tokens: int | None
    source: LengthSource

    @property
    def sequence_tokens(self) -> int | None:
        """KV a request holds by its end: prompt plus completion."""
        if self.prompt_tokens is None or self.completion_tokens is None:
            return None
        return self.prompt_tokens + self.completion_tokens


def mean_sequence_tokens(
    lengths: list[DatasetLengths], samples: dict[str, float] | None = None
) -> float | None:
    """Mean sequence over the datasets running interleaved, weighted by their expected sample
    counts (a dataset with more requests has more of them in flight); equal weights when unknown.
    None when no dataset has both lengths."""
    known = [d for d in lengths if d.sequence_tokens is not None]
    if not known:
        return None
    weights: dict[str, float] = {d.name: (samples or {}).get(d.name) or 0.0 for d in known}
    if not any(weights.values()):
        weights = {d.name: 1.0 for d in known}
    total = sum(weights.values())
    return sum(weights[d.name] * (d.sequence_tokens or 0) for d in known) / total


def concurrent_decodes(
    kv_capacity_tokens: int, mean_sequence: float, max_running_requests: int | None = None
) -> int:
    """Requests that decode at once when each holds `mean_sequence` tokens of KV."""
    if mean_sequence <= 0:
        raise ValueError(f"mean sequence must be positive, got {mean_sequence}")
    fit = int(round(kv_capacity_tokens / mean_sequence, 6))  # 159,277 / 4,000 = 39.8 → 39
    return min(fit, max_running_requests) if max_running_requests else fit


def throughput_ceiling(decodes: int, decode_tokens_per_second: float) -> float:
    """Completion tokens per second when `decodes` requests each run at the given speed."""
    return decodes * decode_tokens_per_second


@dataclass(frozen=True)
class ThroughputVerdict:
    observed: float
    ceiling: float
    ratio: float
    kv_bound: bool
    message: str


def explain_throughput(
    observed: float, ceiling: float, decodes: int, decode_tokens_per_second: float
) -> ThroughputVerdict:
    """Whether an observed rate is the KV bound or something else holds it back."""
    ratio = observed / ceiling if ceiling else 0.0
    bound = f"{decodes} decodes × {decode_tokens_per_second:g} tok/s = {ceiling:,.0f} tok/s"
    if ratio > 1.1:
        message = (
            f"{observed:,.0f} tok/s is {ratio:.0%} of the full-length KV bound ({bound}): "
            "running requests hold less KV than their full sequence (most are mid-way, "
            "some are short), so more of them fit; the plan's lengths are pessimistic, or "
            "the per-request speed is higher than given"
        )
    elif ratio >= AT_CEILING:
        message = (
            f"{observed:,.0f} tok/s is {ratio:.0%} of the KV bound ({bound}): the server runs "
            "every decode that fits; more client concurrency only lengthens the queue. "
            "More KV (a higher memFractionStatic within headroom, more GPUs, or a lossy "
            "KV dtype if quality allows) or shorter sequences raise it"
        )
    else:
        message = (
            f"{observed:,.0f} tok/s is {ratio:.0%} of the KV bound ({bound}): not KV-bound; "
            "check that the generator keeps enough requests in flight (a queue should "
            "exist) and the per-request decode speed"
        )
    return ThroughputVerdict(observed, ceiling, ratio, ratio >= AT_CEILING, message)
