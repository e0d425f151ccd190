"""Admission, the budget half: may this dataset start one more request? Pure functions over
plain numbers, so every rule is unit-tested without a server (the other half, whether a server
has room and which sample goes next, is `room.py`).

Completion lengths are predicted from what the dataset produced so far (before any data:
`maxNewTokens`, the worst case). A request is admitted while the chance that done + in flight +
it stays within the budget is high.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

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


@dataclass(frozen=True)
class LengthEstimate:
    """A distribution of final completion lengths: `values` (ascending) with `mass` (sums to 1),
    and how many finished generations back the estimate from each value up."""

    values: np.ndarray
    mass: np.ndarray
    events_at_or_above: np.ndarray

    @classmethod
    def worst_case(cls, max_new_tokens: int) -> LengthEstimate:
        return cls(np.array([float(max_new_tokens)]), np.array([1.0]), np.array([math.inf]))

    def moments(self, produced: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For generations known to have produced at least `produced` tokens each: the mean and
        variance of their final lengths, and the variance of each mean as an estimate (few
        finished generations above `produced`: an uncertain mean)."""
        x, m = self.values, self.mass
        s0 = np.cumsum(m[::-1])[::-1]
        s1 = np.cumsum((m * x)[::-1])[::-1]
        s2 = np.cumsum((m * x * x)[::-1])[::-1]
        p = np.asarray(produced, dtype=float)
        i = np.minimum(np.searchsorted(x, p, side="left"), len(x) - 1)  # beyond all: the top
        mean = s1[i] / s0[i]
        var = np.maximum(0.0, s2[i] / s0[i] - mean * mean)
        return mean, var, var / np.maximum(1.0, self.events_at_or_above[i])

    def survival(self, produced: Sequence[float], steps: np.ndarray) -> np.ndarray:
        """For generations known to have produced `produced` tokens each (rows): the chance each
        is still running `steps` more tokens on (columns)."""
        x = self.values
        longer = np.concatenate((np.cumsum(self.mass[::-1])[::-1], [0.0]))  # P(L ≥ x[j])
        p = np.asarray(produced, dtype=float)[:, None]
        now = longer[np.searchsorted(x, p, side="right")]  # P(L > p)
        later = longer[np.searchsorted(x, p + steps[None, :], side="right")]
        return np.divide(later, now, out=np.zeros_like(later), where=now > 0)


class LengthModel:
    """Completion lengths one dataset has produced, and what the next one will probably be."""

    def __init__(self, max_new_tokens: int, observed: list[int] | None = None) -> None:
        self.max_new_tokens = max_new_tokens
        self._recent: deque[int] = deque(maxlen=WINDOW)
        self._sorted: list[int] = []
        self._events: tuple[np.ndarray, np.ndarray] | None = None  # distinct lengths, counts
        self._mean: float | None = None  # of the finished generations alone, until the next one
        self._alive: np.ndarray | None = None  # survival_new, until the next one
        for n in observed or []:
            self.observe(n)

    def observe(self, completion_tokens: int) -> None:
        if len(self._recent) == self._recent.maxlen:
            old = self._recent[0]
            del self._sorted[bisect.bisect_left(self._sorted, old)]
        self._recent.append(completion_tokens)
        bisect.insort(self._sorted, min(completion_tokens, self.max_new_tokens))
        self._events = self._mean = self._alive = None

    @property
    def count(self) -> int:
        return len(self._recent)

    @property
    def informed(self) -> bool:
        return self.count >= MIN_OBSERVATIONS

    def estimate(self, running: Sequence[float] = ()) -> LengthEstimate:
        """Kaplan–Meier estimate of the final length from the finished generations and the
        `running` ones (tokens each has surely produced by now).

        Finished generations alone under-represent the long ones: those are still running
        (length-biased sampling; at 256 in flight of ~1,000 samples the predicted in-flight
        total was 16 % short). A running generation is a right-censored observation — its
        length is at least what it has produced — which the product-limit estimate counts
        without bias. Mass beyond the longest finished generation goes to `maxNewTokens`, and
        the prior's pseudo-observation sits there too."""
        top = float(self.max_new_tokens)
        if not self.informed:
            return LengthEstimate.worst_case(self.max_new_tokens)
        if self._events is None:
            values, counts = np.unique(np.asarray(self._sorted, dtype=float), return_counts=True)
            self._events = values, counts.astype(float)
        values, counts = self._events
        if values[-1] < top:
            values, counts = np.append(values, top), np.append(counts, 0.0)
        counts = counts.copy()
        counts[-1] += PRIOR_WEIGHT
        events_at_or_above = np.cumsum(counts[::-1])[::-1]
        censored = np.sort(np.asarray(running, dtype=float))
        # A running generation is at risk at every length up to what it has produced.
        at_risk = events_at_or_above + (
            len(censored) - np.searchsorted(censored, values, side="left")
        )
        hazard = counts / at_risk
        survival_before = np.concatenate(([1.0], np.cumprod(1.0 - hazard)[:-1]))
        mass = survival_before * hazard
        mass[-1] = survival_before[-1]  # nothing is longer than maxNewTokens
        return LengthEstimate(values, mass, events_at_or_above)

    def mean(self) -> float:
        """Expected length of the next generation, from the finished ones (and the prior)."""
        if self._mean is None:  # asked per request started: computed once per finished one
            self._mean = float(self.estimate().moments([0.0])[0][0])
        return self._mean

    def survival_new(self, steps: np.ndarray) -> np.ndarray:
        """The chance one more generation still runs after each of `steps` tokens (computed
        once per finished generation; `steps` is the same grid on every call)."""
        if self._alive is None or len(self._alive) != len(steps):
            self._alive = self.estimate().survival([0.0], steps)[0]
        return self._alive

    def chance_within(self, tokens: float) -> float:
        """Chance that one more generation is at most `tokens` long."""
        if not self.informed:
            return 1.0 if tokens >= self.max_new_tokens else 0.0
        return bisect.bisect_right(self._sorted, tokens) / len(self._sorted)

    def predict(self) -> float:
        """Completion tokens one request adds to the server's load: the expected length (a
        high quantile per request would overstate the sum of many by the tail's share —
        twice the mean here — and leave a KV-bound server under-filled; the live queue and
        KV readings are what hold admission back)."""
        return min(float(self.max_new_tokens), max(1.0, self.mean()))


def predicted_in_flight(model: LengthModel, in_flight: Sequence[float]) -> tuple[float, float]:
    """Mean and variance of the summed final lengths of the requests in flight plus one new one.

    Each length is drawn independently given the distribution, but the distribution itself is
    estimated from the same few finished generations for all of them, so its error does not
    average out: that part is counted as fully correlated (standard errors add, not their
    squares). It is what keeps a dataset whose in-flight requests are most of what is left from
    trusting a mean seen on a few dozen samples."""
    estimate = model.estimate(in_flight)
    mean, var, mean_var = estimate.moments([*in_flight, 0.0])
    correlated = float(np.sqrt(mean_var).sum())
    return float(mean.sum()), float(var.sum()) + correlated * correlated


def budget_admits(
    *,
    budget: int | None,
    done: int,
    in_flight: Sequence[float],
    in_flight_known: int,
    new_known: int,
    model: LengthModel,
) -> bool:
    """Whether one more request fits a token budget.

    `done`: tokens already written; `in_flight`: for each request in flight, the tokens it has
    surely generated by now (0 when unknown); `in_flight_known` / `new_known`: the part of the
    tokens known in advance (prompt tokens for a total budget, 0 for a completion budget).
    The final lengths are predicted from finished and running generations together
    (`LengthModel.estimate`), each conditioned on what its request has already produced, and the
    request is admitted while their sum stays within the budget with probability CONFIDENCE.
    With nothing in flight, one more request is admitted while it is at least as likely to fit
    as not, so a dataset ends within about one sample of its budget."""
    if budget is None:
        return True
    remaining = budget - done - in_flight_known - new_known
    if remaining <= 0:
        return False
    if not in_flight:
        # Nothing running: without data, try (nothing says it will not fit); with data, go on
        # while one more sample is at least as likely to fit as not.
        return not model.informed or model.chance_within(remaining) >= 0.5
    mean, var = predicted_in_flight(model, in_flight)
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
