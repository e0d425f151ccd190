"""Admission: which request may start now, and on which server. Pure functions over plain
numbers, so every rule is unit-tested without a server.

Two questions are asked before each request:
1. Budget: can the dataset's budget still hold it? Completion lengths are predicted from what the
   dataset produced so far (before any data: `maxNewTokens`, the worst case). A request is
   admitted while the chance that done + in flight + it stays within the budget is high.
2. Capacity: does a server have room? In `auto` mode three readings decide: the predicted
   peak of the KV tokens its requests will hold at once (each request's prompt, what it has
   generated and its expected remaining completion) stays within the pool, so the server
   rarely has to retract; its queue (live `num_queue_reqs`, plus what was sent since that reading)
   stays short but not empty, so every slot that frees is refilled at once; and the predicted
   tokens in flight stay below `maxTokensFactor` × the pool (the cap before any reading).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from draftgen.contract.sglang_scheduler import (
    CLIP_MAX_NEW_TOKENS,
    DEFAULT_SCHEDULE_CONSERVATIVENESS,
    new_token_ratio_range,
)

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


class LengthModel:
    """Completion lengths one dataset has produced, and what the next one will probably be."""

    def __init__(self, max_new_tokens: int, observed: list[int] | None = None) -> None:
        self.max_new_tokens = max_new_tokens
        self._recent: deque[int] = deque(maxlen=WINDOW)
        self._sorted: list[int] = []
        self._events: tuple[np.ndarray, np.ndarray] | None = None  # distinct lengths, counts
        self._mean: float | None = None  # of the finished generations alone, until the next one
        for n in observed or []:
            self.observe(n)

    def observe(self, completion_tokens: int) -> None:
        if len(self._recent) == self._recent.maxlen:
            old = self._recent[0]
            del self._sorted[bisect.bisect_left(self._sorted, old)]
        self._recent.append(completion_tokens)
        bisect.insort(self._sorted, min(completion_tokens, self.max_new_tokens))
        self._events = self._mean = None

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
    new_token_ratio: float | None = None
    """Live `sglang:new_token_ratio`: the share of each running request's remaining tokens the
    server reserves before it admits another."""
    held: np.ndarray | None = field(default=None, compare=False)
    """KV tokens each of this generator's requests on it holds by now (prompt + generated),
    oldest sent first; None: unknown (admission then uses the token cap alone)."""
    remaining: np.ndarray | None = field(default=None, compare=False)
    """Expected completion tokens each of them has still to generate (same order)."""
    freed: float = 0.0
    """KV tokens this generator's requests that ended since the last reading held."""
    landed: int = 0
    """How many of them (the server was running them at that reading)."""
    prompts: np.ndarray | None = field(default=None, compare=False)
    """Their prompt tokens (same order)."""
    max_new: np.ndarray | None = field(default=None, compare=False)
    """Their `max_new_tokens` (same order)."""


# The predicted peak may reach this multiple of the pool. It is a peak of expectations made
# from conservative readings (progress from a high speed quantile, a tail left to every long
# request), and the requests do not all peak together: on the benchmarks' KV-bound server
# (bench/saturation.py, 4,000-token coding prompts) 1.00 kept KV usage at 0.87, 1.08 at 0.93
# with 3 % of requests retracted once, 1.12 at 0.94 with 8 %.
PEAK_SHARE = 1.08


def queue_target(running: float | None) -> int:
    """A short queue: enough waiting requests to refill decode slots as they free, no more."""
    return max(2, math.ceil(0.1 * (running or 0)))


def predicted_peak(held: np.ndarray, remaining: np.ndarray) -> float:
    """Most KV tokens requests will hold at once if each grows by one token per decode step
    until it ends `remaining` steps from now: just before the k-th shortest ends, those still
    running hold what they hold now plus that many steps each."""
    if len(held) == 0:
        return 0.0
    order = np.argsort(remaining, kind="stable")
    r, h = remaining[order], held[order]
    still = np.cumsum(h[::-1])[::-1]  # held by the k-th shortest and every longer one
    active = len(r) - np.arange(len(r))
    return float(max(h.sum(), (still + active * r).max()))


def expected_remaining(mean: float, limit: int, produced: np.ndarray) -> np.ndarray:
    """Completion tokens requests that produced `produced` each have still to go: the expected
    length minus that, but a quarter of it at least (past its expected length a generation
    still has a tail to go), and never past `limit` (maxNewTokens)."""
    left = np.maximum(mean - produced, 0.25 * mean)
    return np.maximum(1.0, np.minimum(left, limit - produced))


# SGLang 0.5's own admission (schedule_policy.py `add_one_req`, mem_cache/prefill_budget.py):
# a request leaves its FCFS queue only when prompt + min(max_new_tokens, CLIP_MAX_NEW) + a page
# fits in the free pool less new_token_ratio × min(max_new − generated, CLIP_MAX_NEW) for every
# running request; a queue head that does not fit holds back everything behind it.
CLIP_MAX_NEW = CLIP_MAX_NEW_TOKENS
"""No request is charged more than this for its output."""
# The server's reservation ratio after a start or an idle spell (used when it reports none):
# the most it reserves at its default conservativeness.
INIT_NEW_TOKEN_RATIO = new_token_ratio_range(DEFAULT_SCHEDULE_CONSERVATIVENESS)[0]


def server_charge(prompt: float, max_new: float) -> float:
    """KV tokens the server must find free before it starts a request (page size 1)."""
    return prompt + min(max_new, CLIP_MAX_NEW) + 1


def admission_room(view: ServerView) -> float | None:
    """KV tokens the server's own admission has free for one more request: its free pool (last
    reading, plus what requests that ended since then held) less what it reserves for the
    running requests and what the ones waiting before it will take. This generator's requests, oldest first, are taken as the server's running
    ones (as many as it reported), the rest as its FCFS queue. None: no live reading."""
    if (
        view.token_usage is None
        or view.running is None
        or view.held is None
        or view.prompts is None
        or view.max_new is None
    ):
        return None
    ratio = INIT_NEW_TOKEN_RATIO if view.new_token_ratio is None else view.new_token_ratio
    k = min(len(view.prompts), max(0, round(view.running) - view.landed))
    made = view.held - view.prompts
    left = np.clip(np.minimum(view.max_new[:k] - made[:k], CLIP_MAX_NEW), 0, None)
    waiting = sum(server_charge(p, m) for p, m in zip(view.prompts[k:], view.max_new[k:]))
    free = view.kv_tokens * (1.0 - view.token_usage) + view.freed
    return free - ratio * float(left.sum()) - waiting


def fits_room(view: ServerView, prompt: float, max_new: float) -> bool | None:
    """Whether the server would start this request at once (None: unknown)."""
    room = admission_room(view)
    return None if room is None else server_charge(prompt, max_new) <= room


def fits_any_room(views: Sequence[ServerView], prompt: float, max_new: float) -> bool | None:
    """Whether some healthy server would start this request at once (None: no server says)."""
    answers = [fits_room(v, prompt, max_new) for v in views if v.healthy]
    if any(answers):
        return True
    return False if answers and all(a is False for a in answers) else None


# A ready sample that does not fit the server's room may be passed over by this many samples
# of other datasets that do; then it goes first whatever it costs (FIFO would send it at once).
PASS_LIMIT = 6


def send_order(
    in_flight: Sequence[int],
    fits: Sequence[bool | None],
    passed: Sequence[int],
    charge: Sequence[float],
) -> list[int]:
    """In which order the datasets' ready samples are offered to the servers: one passed over
    PASS_LIMIT times first, then the ones that fit a server's room, then the others; within each,
    the dataset with the fewest requests in flight first (none starves, none drains) — except
    among those that do not fit, where the smallest `charge` (`server_charge`) goes first: it is
    the one the server will start soonest."""

    def rank(i: int) -> tuple[int, float, int]:
        if passed[i] >= PASS_LIMIT:
            return 0, 0.0, in_flight[i]
        if fits[i] is False:
            return 2, charge[i], in_flight[i]
        return 1, 0.0, in_flight[i]

    return sorted(range(len(in_flight)), key=rank)


def queued_estimate(view: ServerView) -> float | None:
    """Requests waiting on the server: its last reading, or more when this generator has sent
    more than the server was running then (sent since the reading: they wait too)."""
    if view.queue is None:
        return None
    return max(view.queue, view.in_flight - (view.running or 0.0))


def server_admits(
    view: ServerView,
    tokens: float,
    *,
    mode: str,
    max_requests: int | None,
    tokens_factor: float,
    prompt: float | None = None,
    max_new: float | None = None,
) -> bool:
    """Whether `view` may take one more request of `tokens` predicted tokens (`prompt` of them
    known: the prompt; the rest its expected completion; `max_new`: its maxNewTokens)."""
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
    if view.max_running is not None and view.in_flight >= view.max_running + queue_target(
        view.max_running
    ):
        return False
    if view.held is not None and view.remaining is not None and prompt is not None:
        peak = predicted_peak(
            np.append(view.held, prompt), np.append(view.remaining, max(1.0, tokens - prompt))
        )
        if peak > PEAK_SHARE * view.kv_tokens:
            return False  # it would be retracted, or push another out, before it ends
    queued = queued_estimate(view)
    if queued is not None and queued >= queue_target(view.running):
        if prompt is not None and max_new is not None and fits_room(view, prompt, max_new):
            return True  # the server starts it at once (its last reading is already stale)
        # Enough waiting to refill the slots that free; more would only wait. A server that
        # had no queue at its last reading admits at once: let the ramp double per reading.
        return view.queue == 0 and queued < max(queue_target(view.running), view.running or 0)
    return True


def pick_server(
    views: list[ServerView],
    tokens: float,
    *,
    mode: str,
    max_requests: int | None,
    tokens_factor: float,
    prompt: float | None = None,
    max_new: float | None = None,
) -> int | None:
    """The least-loaded server that admits the request (by share of its KV pool reserved),
    or None when none has room."""
    best: tuple[float, int] | None = None
    for i, view in enumerate(views):
        if not server_admits(
            view,
            tokens,
            mode=mode,
            max_requests=max_requests,
            tokens_factor=tokens_factor,
            prompt=prompt,
            max_new=max_new,
        ):
            continue
        load = (view.in_flight_tokens + (view.queue or 0) * tokens) / max(view.kv_tokens, 1)
        if best is None or load < best[0]:
            best = (load, i)
    return None if best is None else best[1]
