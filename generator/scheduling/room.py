"""Admission, the room half: does a server have room for a request, which server takes it,
and which dataset's ready sample goes next. Pure functions over plain numbers, so every rule is
unit-tested without a server (the budget half is `admission.py`).

In `auto` mode three readings decide: the expected peak of the KV its requests will hold at once
(each holds its prompt and what it generated, and grows while it runs; the chance it still runs
comes from the lengths its dataset produced) stays within the pool, so the server rarely has to
retract; its queue (live `num_queue_reqs`,
plus what was sent since that reading) stays short but not empty, so every slot that frees is
refilled at once; and the predicted tokens in flight stay below `maxTokensFactor` × the pool
(the cap before any reading). SGLang's own admission rule decides which ready sample fits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from draftgen.contract.sglang_scheduler import (
    CLIP_MAX_NEW_TOKENS,
    DEFAULT_SCHEDULE_CONSERVATIVENESS,
    new_token_ratio_range,
)


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
    kv_mean: np.ndarray | None = field(default=None, compare=False)
    """Expected KV all of them will hold at each step of HORIZON (`kv_moments`, summed)."""
    kv_var: np.ndarray | None = field(default=None, compare=False)
    """Its variance."""
    kv_most: np.ndarray | None = field(default=None, compare=False)
    """The most they can hold at each step of HORIZON (as long as any of them may run)."""
    freed: float = 0.0
    """KV tokens this generator's requests that ended since the last reading held."""
    landed: int = 0
    """How many of them (the server was running them at that reading)."""
    prompts: np.ndarray | None = field(default=None, compare=False)
    """Their prompt tokens (same order)."""
    max_new: np.ndarray | None = field(default=None, compare=False)
    """Their `max_new_tokens` (same order)."""


# Decode steps ahead at which the KV a server's requests are expected to hold is weighed: every
# step up to 8, then about 10 % apart, up to the longest maxNewTokens SGLang serves.
HORIZON = np.unique(np.round(np.concatenate((np.arange(9.0), np.geomspace(8, 2**18, 110)))))
# The expected KV of the requests on a server plus PEAK_Z standard deviations (their lengths
# drawn independently) may reach this share of the pool at any step ahead. On the benchmarks'
# simulated KV-bound server (bench/saturation.py, 1M-token budgets) 0.97 and 1.5 kept mean KV
# usage at 0.92 on 4,000-token coding prompts with 3 % of requests retracted once; 0.95 and 2
# at 0.87 with none; 1.0 and 1 at 0.94 with 9 %.
PEAK_SHARE = 0.97
PEAK_Z = 1.5


def queue_target(running: float | None) -> int:
    """A short queue: enough waiting requests to refill decode slots as they free, no more."""
    return max(2, math.ceil(0.1 * (running or 0)))


def kv_moments(held: np.ndarray, alive: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per request (rows) and step ahead (HORIZON, columns): the mean and variance of the KV
    it holds then — `held` now plus one token per step while it runs, with `alive` the chance
    it still runs then (it holds nothing once it ended) — and the most it can hold then."""
    kv = np.asarray(held, dtype=float)[:, None] + HORIZON[None, :]
    return kv * alive, kv * kv * alive * (1.0 - alive), kv * (alive > 0)


def calibrated_progress(
    prompts: np.ndarray, made: np.ndarray, running: int, used: float
) -> np.ndarray:
    """Tokens made by each request on a server (oldest sent first), estimated from the time it
    has been in flight (which counts its wait in the queue, at a fast speed quantile), scaled
    so that the `running` oldest hold the `used` KV tokens the server reports; the others wait
    in its queue and have made nothing yet."""
    out = np.zeros_like(made)
    k = max(0, min(len(made), running))
    estimated = float(made[:k].sum())
    if k and estimated > 0:
        scale = min(1.0, max(0.0, (used - float(prompts[:k].sum())) / estimated))
        out[:k] = made[:k] * scale
    return out


def expected_peak(mean: np.ndarray, var: np.ndarray, most: np.ndarray) -> float:
    """The most KV the requests will hold at any step ahead, with PEAK_Z deviations to spare
    but never more than they hold if none ends (`most`): a request that ends frees its cells,
    one that runs on grows by one a step."""
    spare = mean + PEAK_Z * np.sqrt(np.maximum(var, 0.0))
    return float(np.minimum(spare, most).max())


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
    alive: np.ndarray | None = None,
) -> bool:
    """Whether `view` may take one more request of `tokens` predicted tokens (`prompt` of them
    known: the prompt; the rest its expected completion; `max_new`: its maxNewTokens; `alive`:
    the chance it still runs at each step of HORIZON)."""
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
    if (
        view.kv_mean is not None
        and view.kv_var is not None
        and view.kv_most is not None
        and alive is not None
    ):
        mean, var, most = kv_moments(np.array([prompt or tokens]), alive[None, :])
        peak = expected_peak(view.kv_mean + mean[0], view.kv_var + var[0], view.kv_most + most[0])
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
    alive: np.ndarray | None = None,
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
            alive=alive,
        ):
            continue
        load = (view.in_flight_tokens + (view.queue or 0) * tokens) / max(view.kv_tokens, 1)
        if best is None or load < best[0]:
            best = (load, i)
    return None if best is None else best[1]


@dataclass(frozen=True)
class Ready:
    """A dataset's next sample, as the admission loop weighs it."""

    prompt: int
    max_new: int
    tokens: float
    """Predicted prompt + completion tokens (what a server's view is charged)."""
    in_flight: int
    """Requests of its dataset in flight."""
    passed: int
    """Samples of other datasets sent while this one waited (see `send_order`)."""
    alive: np.ndarray | None = field(default=None, compare=False)
    """The chance its generation still runs at each step of HORIZON (None: not weighed)."""


@dataclass(frozen=True)
class Launch:
    """One decision of the admission loop: the ready sample at `position` goes to `server`."""

    position: int
    server: int
    waited: list[int]
    """Positions of the others that do not fit a server's room: they wait while it goes."""


def next_launch(
    ready: Sequence[Ready],
    views: list[ServerView],
    *,
    mode: str,
    max_requests: int | None,
    tokens_factor: float,
) -> Launch | None:
    """Which ready sample goes next and to which server, offered in `send_order`. None when no
    server takes one now, or when one passed over PASS_LIMIT times does not fit (its turn:
    nothing goes before it; wait for an answer)."""
    auto = mode == "auto"
    fits = [fits_any_room(views, r.prompt, r.max_new) if auto else None for r in ready]
    order = send_order(
        [r.in_flight for r in ready],
        fits,
        [r.passed for r in ready],
        [server_charge(r.prompt, r.max_new) for r in ready],
    )
    for i in order:
        r = ready[i]
        index = pick_server(
            views,
            r.tokens,
            mode=mode,
            max_requests=max_requests,
            tokens_factor=tokens_factor,
            prompt=r.prompt,
            max_new=r.max_new,
            alive=r.alive,
        )
        if index is None:
            if r.passed >= PASS_LIMIT:
                return None
            continue  # a smaller sample of another dataset may still fit
        waited = [j for j, f in enumerate(fits) if f is False and j != i]
        return Launch(position=i, server=index, waited=waited)
    return None
