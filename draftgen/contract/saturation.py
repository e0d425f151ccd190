"""When an SGLang server counts as saturated: KV usage high AND a queue that keeps growing.

One definition for the chart's alert `DraftgenKVCacheSaturated` (charts/draftgen/files/alerts.yaml
spells these numbers in PromQL; tests/top/test_saturation.py checks they are these) and for
`draftgen top`'s verdict per server replica. Usage alone is not saturation: a healthy, well-fed
server sits at 0.95, and the generator keeps a short queue on purpose (field facts, lesson 4).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

TOKEN_USAGE = "sglang:token_usage"
"""SGLang's gauge of the KV pool in use, 0–1."""
QUEUE = "sglang:num_queue_reqs"
"""SGLang's gauge of requests waiting for KV space."""
RUNNING = "sglang:num_running_reqs"
"""SGLang's gauge of requests decoding."""

KV_USAGE_HIGH = 0.9
"""Mean KV usage above this over USAGE_WINDOW is "high"."""
USAGE_WINDOW_SECONDS = 5 * 60
"""The alert's `avg_over_time(...[5m])`."""
QUEUE_WINDOW_SECONDS = 10 * 60
"""The alert's `min_over_time(...[10m]) > 0` and `deriv(...[10m]) > 0`."""


class Verdict(enum.StrEnum):
    SATURATED = "SATURATED"
    """Usage high, a queue all along the window, and growing: requests wait for KV space."""
    FULL = "full"
    """Usage high but the queue does not grow: the server keeps up (the healthy steady state)."""
    OK = "ok"
    UNKNOWN = "?"
    """No reading of usage or queue yet."""


@dataclass(frozen=True)
class LoadPoint:
    at: float
    """Seconds (any clock, the same for every point)."""
    token_usage: float
    queue: float


def _slope(points: Sequence[LoadPoint]) -> float:
    """Least-squares slope of the queue over time, as PromQL's `deriv` computes it."""
    n = len(points)
    if n < 2:
        return 0.0
    mean_t = sum(p.at for p in points) / n
    mean_q = sum(p.queue for p in points) / n
    var = sum((p.at - mean_t) ** 2 for p in points)
    if var == 0:
        return 0.0
    return sum((p.at - mean_t) * (p.queue - mean_q) for p in points) / var


def verdict(points: Sequence[LoadPoint], now: float | None = None) -> Verdict:
    """The alert's rule over the readings in its windows (a live view holds less history than
    the windows at first: it judges what it has, and needs two readings to see growth)."""
    if not points:
        return Verdict.UNKNOWN
    now = points[-1].at if now is None else now
    usage = [p.token_usage for p in points if p.at >= now - USAGE_WINDOW_SECONDS]
    queue = [p for p in points if p.at >= now - QUEUE_WINDOW_SECONDS]
    if not usage or sum(usage) / len(usage) <= KV_USAGE_HIGH:
        return Verdict.OK
    if len(queue) >= 2 and min(p.queue for p in queue) > 0 and _slope(queue) > 0:
        return Verdict.SATURATED
    return Verdict.FULL
