"""Admission: which request may start now, and on which server. Pure functions over plain
numbers, so every rule is unit-tested without a server.

Two questions are asked before each request:
1. Budget: can the dataset's budget still hold it? Completion lengths are predicted from what the
   dataset produced so far (before any data: `maxNewTokens`, the worst case). A request is
   admitted while the chance that done + in flight + it stays within the budget is high.
2. Capacity: does a server have room? In `auto` mode the predicted tokens in flight follow the
   server's KV pool (`max_total_num_tokens`) and its live queue: a short queue, never idle.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass
from typing import Sequence
from statistics import NormalDist

# Observations before the dataset's own lengths replace the prior (maxNewTokens).
MIN_OBSERVATIONS = 8
# Lengths remembered per dataset for the empirical distribution.
WINDOW = 4096
# The prior (one generation as long as maxNewTokens) stays in the predictions with this weight in
# observations: a rare long tail (truncated generations) the first few dozen samples did not show
# still counts, and fades as data accumulates.
PRIOR_WEIGHT = 1.0
# Chance that the budget holds everything admitted (while other requests are in flight).
CONFIDENCE = 0.97
_Z = NormalDist().inv_cdf(CONFIDENCE)


class LengthModel:
    """Completion lengths one dataset has produced, and what the next one will probably be."""

    def __init__(self, max_new_tokens: int, observed: list[int] | None = None) -> None:
        self.max_new_tokens = max_new_tokens
        self._recent: deque[int] = deque(maxlen=WINDOW)
        self._sorted: list[int] = []
        self._suffix: list[float] | None = None  # sums of x and x² from index i to the end
        self._suffix2: list[float] | None = None
        for n in observed or []:
            self.observe(n)

    def observe(self, completion_tokens: int) -> None:
        if len(self._recent) == self._recent.maxlen:
            old = self._recent[0]
            del self._sorted[bisect.bisect_left(self._sorted, old)]
        self._recent.append(completion_tokens)
        bisect.insort(self._sorted, completion_tokens)
        self._suffix = self._suffix2 = None

    @property
    def count(self) -> int:
        return len(self._recent)

    @property
    def informed(self) -> bool:
        return self.count >= MIN_OBSERVATIONS

    def _sums(self) -> tuple[list[float], list[float]]:
        if self._suffix is None or self._suffix2 is None:
            s1, s2 = [0.0] * (len(self._sorted) + 1), [0.0] * (len(self._sorted) + 1)
            for i in range(len(self._sorted) - 1, -1, -1):
                x = self._sorted[i]
                s1[i], s2[i] = s1[i + 1] + x, s2[i + 1] + x * x
            self._suffix, self._suffix2 = s1, s2
        return self._suffix, self._suffix2

    def moments_above(self, produced: float = 0.0) -> tuple[float, float]:
        """Mean and variance of the final length of a generation known to have produced at
        least `produced` tokens (lengths observed above it; long requests stay in flight
        longest, so this corrects for what is still running being the long ones)."""
        if not self.informed:
            return float(self.max_new_tokens), 0.0
        s1, s2 = self._sums()
        i = bisect.bisect_left(self._sorted, produced)
        n = len(self._sorted) - i
        if n == 0:  # longer than anything seen: halfway to the limit
            return produced + (self.max_new_tokens - produced) / 2, 0.0
        top = float(self.max_new_tokens)
        w = PRIOR_WEIGHT
        mean = (s1[i] + w * top) / (n + w)
        return mean, max(0.0, (s2[i] + w * top * top) / (n + w) - mean * mean)

    def mean(self) -> float:
        return self.moments_above(0.0)[0]

    def sd(self) -> float:
        return math.sqrt(self.moments_above(0.0)[1])

    def quantile(self, q: float) -> float:
        """The q-quantile of completion lengths (the prior before enough data)."""
        if not self.informed:
            return float(self.max_new_tokens)
        i = min(len(self._sorted) - 1, max(0, math.ceil(q * len(self._sorted)) - 1))
        return float(self._sorted[i])

    def chance_within(self, tokens: float) -> float:
        """Chance that one more generation is at most `tokens` long."""
        if not self.informed:
            return 1.0 if tokens >= self.max_new_tokens else 0.0
        return bisect.bisect_right(self._sorted, tokens) / len(self._sorted)

    def predict(self) -> float:
        """Tokens to reserve for one request (a high quantile: capacity errs on the safe side)."""
        return min(float(self.max_new_tokens), max(1.0, self.quantile(0.9)))


def budget_admits(*, budget: int | None, done: int, in_flight: Sequence[float],
                  in_flight_known: int, new_known: int, model: LengthModel) -> bool:
    """Whether one more request fits a token budget.

    `done`: tokens already written; `in_flight`: for each request in flight, the tokens it has
    surely generated by now (0 when unknown); `in_flight_known` / `new_known`: the part of the
    tokens known in advance (prompt tokens for a total budget, 0 for a completion budget).
    The final lengths are summed as independent draws, each conditioned on what its request has
    already produced, and the request is admitted while the sum stays within the budget with
    probability CONFIDENCE. With nothing in flight, one more request is admitted while it is at
    least as likely to fit as not, so a dataset ends within about one sample of its budget."""
    if budget is None:
        return True
    remaining = budget - done - in_flight_known - new_known
    if remaining <= 0:
        return False
    if not in_flight:
        # Nothing running: without data, try (nothing says it will not fit); with data, go on
        # while one more sample is at least as likely to fit as not.
        return not model.informed or model.chance_within(remaining) >= 0.5
    moments = [model.moments_above(produced) for produced in in_flight]
    new_mean, new_var = model.moments_above(0.0)
    if model.informed:
        # The first lengths a dataset sees are its short ones (long requests are still running):
        # count the in-flight requests at their conditional means, so the next request is not
        # predicted from the short ones alone.
        new_mean = ((new_mean * model.count + sum(m for m, _ in moments))
                    / (model.count + len(moments)))
    mean = new_mean + sum(m for m, _ in moments)
    var = new_var + sum(v for _, v in moments)
    return mean + _Z * math.sqrt(var) <= remaining


# Quantile of recent requests' speeds (tokens/s) used to estimate what those in flight produced.
# Above the median on purpose: over-estimating progress predicts longer final lengths (admitting
# less near the end), under-estimating it would predict them too short and overshoot.
PROGRESS_SPEED_QUANTILE = 0.75


def progress_speed(speeds: Sequence[float]) -> float:
    """Tokens/s to multiply an in-flight request's elapsed time by (0 before 8 completions)."""
    if len(speeds) < MIN_OBSERVATIONS:
        return 0.0
    ordered = sorted(speeds)
    return ordered[min(len(ordered) - 1, int(PROGRESS_SPEED_QUANTILE * len(ordered)))]


def samples_admit(*, max_samples: int | None, done: int, in_flight: int) -> bool:
    """A sample count is exact: never more requests than samples left."""
    return max_samples is None or done + in_flight < max_samples


@dataclass(frozen=True, slots=True)
class ServerView:
    """What admission knows about one server."""

    kv_tokens: int
    """`max_total_num_tokens` from `/get_server_info`."""
    max_running: int | None
    """`max_running_requests` (None when unknown)."""
    in_flight: int
    """Requests this generator has outstanding on it."""
    in_flight_tokens: float
    """Their predicted prompt + completion tokens."""
    queue: float | None = None
    """Live `sglang:num_queue_reqs` (None when no recent reading)."""
    running: float | None = None
    """Live `sglang:num_running_reqs`."""
    token_usage: float | None = None
    """Live `sglang:token_usage` (0–1)."""
    healthy: bool = True


def queue_target(running: float | None) -> int:
    """A short queue: enough waiting requests to refill decode slots as they free, no more."""
    return max(2, math.ceil(0.1 * (running or 0)))


def server_admits(view: ServerView, tokens: float, *, mode: str, max_requests: int | None,
                  tokens_factor: float) -> bool:
    """Whether `view` may take one more request of `tokens` predicted tokens."""
    if not view.healthy:
        return False
    if max_requests is not None and view.in_flight >= max_requests:
        return False
    if mode == "fixed":
        return True
    if view.in_flight == 0:
        return True  # never idle, whatever the prompt's size
    if view.in_flight_tokens + tokens > tokens_factor * view.kv_tokens:
        return False
    if view.max_running is not None and view.in_flight >= view.max_running + queue_target(view.max_running):
        return False
    if view.queue is not None and view.queue >= queue_target(view.running):
        # The server already has a queue: more requests would only wait. While KV usage is
        # low the queue drains fast (prefill-bound), so a queue alone is no reason to stop.
        return view.token_usage is not None and view.token_usage < 0.5
    return True


def pick_server(views: list[ServerView], tokens: float, *, mode: str, max_requests: int | None,
                tokens_factor: float) -> int | None:
    """The least-loaded server that admits the request (by share of its KV pool reserved),
    or None when none has room."""
    best: tuple[float, int] | None = None
    for i, view in enumerate(views):
        if not server_admits(view, tokens, mode=mode, max_requests=max_requests,
                             tokens_factor=tokens_factor):
            continue
        load = (view.in_flight_tokens + (view.queue or 0) * tokens) / max(view.kv_tokens, 1)
        if best is None or load < best[0]:
            best = (load, i)
    return None if best is None else best[1]
