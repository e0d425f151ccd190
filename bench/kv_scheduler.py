"""The scheduler of the benchmarks' GPU-like SGLang server: SGLang's KV accounting and scheduling
as plain state, one step at a time (`kv_server.py` serves it over SGLang's HTTP API).

What it models, read from SGLang 0.5.23's scheduler (paths under `sglang/srt/`; line numbers of
that version):
- a KV pool of `pool` tokens (page size 1, no prefix reuse: the benchmarks' prompts are unique);
  a running request holds its prompt plus what it generated, less the newest token (whose cell
  the next decode step allocates);
- admission (`managers/scheduler.py` `_get_new_batch_prefill_raw`, `managers/schedule_policy.py`
  `PrefillAdder`, `mem_cache/prefill_budget.py` `PrefillBudget`): FIFO from the head of the
  queue; every running request is charged `new_token_ratio` × min(max_new − generated, 4,096)
  (ratio 1 for ignore_eos), every request admitted in the pass its prompt + 1 page + the FULL
  min(max_new, 4,096), and these charges add up over the pass; a request is admitted while its
  own charge is below what the pool has left; the first that is not admitted latches
  `batch_is_full`, and no admission is tried again until the running batch shrinks (unless the
  batch was empty: then the next pass tries again, the new requests now charged as running);
- chunked prefill: at most `chunk` prompt tokens per pass (and `max_prefill`); a longer prompt
  is prefilled in chunks, one pass each, charged only its chunk until the last one;
- the prefill step produces each request's first token and is a step of its own (no decode in
  it: SGLang's default, without `--enable-mixed-chunk`);
- the ratio: 0.7 × schedule_conservativeness, decaying per decode step to 0.14 of that over 600
  steps, back to the start when the server idles (`new_token_ratio_tracker.py`);
- retraction (`managers/schedule_batch.py` `retract_decode`): a decode step whose new cells do
  not fit retracts the request with the fewest generated tokens (then the longest prompt) until
  they fit, at least one; each goes to the END of the queue and re-prefills prompt + output
  later; the ratio becomes (decoded + 20 × running) / (Σ max_new + 1) of the requests left;
- step time = a + b × running (decode) or a + p × prompt tokens (prefill): throughput grows with
  the running batch as on a GPU. Defaults from the seed deployment (field-facts lesson 4: ~17
  tok/s per request at ~40 running, ~12.9 at 72 running, pool 159,277 tokens).
Not modelled: the overlap scheduler's one-step lag, prefix caching, priorities, speculative
decoding.

`metrics()` renders `sglang:token_usage`, `num_running_reqs`, `num_queue_reqs`,
`num_retracted_reqs`, ... like SGLang.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field

from draftgen.contract import sglang_scheduler as sgl

CLIP_MAX_NEW = sgl.CLIP_MAX_NEW_TOKENS
DECAY_STEPS = sgl.NEW_TOKEN_RATIO_DECAY_STEPS
RETRACT_DECODE_STEPS = sgl.RETRACT_DECODE_STEPS

# Seed figures: 1 / (a + 40 b) = 17 tok/s, 1 / (a + 72 b) = 12.9 tok/s.
STEP_A = 0.0355
STEP_B = 0.000584
PREFILL_SECONDS_PER_TOKEN = 5e-5  # 20k prompt tokens/s
SEED_POOL = 159_277
# SGLang's --max-prefill-tokens default (arg_groups/fields/schedule.py 71-81); the ratio's
# constants are in draftgen/contract/sglang_scheduler.py (environ.py 646-650).
MAX_PREFILL_TOKENS = 16384
PAGE = 1


@dataclass
class SimRequest:
    rid: str
    prompt: int
    length: int
    """Completion tokens it will produce (drawn by the harness)."""
    max_new: int
    generated: int = 0
    ignore_eos: bool = False
    """Fixed length: SGLang reserves all of its remaining tokens (ratio 1), not an estimate."""
    retractions: int = 0
    done: asyncio.Future | None = None
    started: float = 0.0
    kv: int = 0
    """KV cells it holds now (prompt + generated − 1 while it runs; 0 while it waits)."""

    @property
    def held(self) -> int:
        return self.kv


@dataclass
class Readings:
    """Time-weighted sums for means over a window (the harness picks the window)."""

    samples: list[tuple[float, float, int, int, int, float]] = field(default_factory=list)
    """(time, token_usage, running, queue, tokens decoded so far, share of the pool
    reserved for the running requests' remaining tokens) once per wake."""


class KVScheduler:
    """SGLang's scheduler loop over a KV pool; pure accounting, no I/O (tested on its own).

    One iteration, as SGLang's event loop: `admit()`; if it prefilled, that was the step (its
    time `step_time(prefilled)`); otherwise `retract()` then `decode(steps)` for up to
    `steps_to_event()` steps (nothing changes admission in between: it waits for the batch to
    shrink)."""

    def __init__(
        self,
        pool: int = SEED_POOL,
        *,
        max_running: int = 1024,
        chunk: int = 8192,
        a: float = STEP_A,
        b: float = STEP_B,
        p: float = PREFILL_SECONDS_PER_TOKEN,
        schedule_conservativeness: float = sgl.DEFAULT_SCHEDULE_CONSERVATIVENESS,
        max_prefill: int = MAX_PREFILL_TOKENS,
    ) -> None:
        if schedule_conservativeness <= 0:
            raise ValueError("schedule_conservativeness must be > 0")
        self.pool, self.max_running, self.chunk = pool, max_running, chunk
        self.max_prefill = max_prefill
        self.a, self.b, self.p = a, b, p
        self.schedule_conservativeness = schedule_conservativeness
        self.queue: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.chunked: SimRequest | None = None
        """The request in chunked prefill: neither running nor queued (as SGLang counts it)."""
        self.used = 0
        # new_token_ratio_tracker.py 20-30 (from_config).
        self.init_ratio, self.min_ratio = sgl.new_token_ratio_range(schedule_conservativeness)
        self.decay = (self.init_ratio - self.min_ratio) / DECAY_STEPS
        self.ratio = self.init_ratio
        self.batch_is_full = False
        self.finished_in_prefill: list[SimRequest] = []
        """Requests whose first token, made by the last prefill, was their last (the caller
        answers them)."""
        self.retracted_total = 0
        self.last_retracted = 0
        self.completion_tokens = 0
        self.decoded = 0
        """Tokens generated so far, finished or not (a steady rate, unlike finished requests)."""
        self.prompt_tokens = 0
        self.requests_total = 0

    # ---- one scheduler iteration -----------------------------------------------------------

    def _offset(self, r: SimRequest) -> float:
        """schedule_policy.py 785-794: what a running request is charged for the tokens it may
        still generate."""
        ratio = 1.0 if r.ignore_eos else self.ratio
        return min(r.max_new - r.generated, CLIP_MAX_NEW) * ratio

    def _reserved(self) -> float:
        return sum(self._offset(r) for r in self.running)

    def admit(self) -> int:
        """One prefill pass (scheduler.py `_get_new_batch_prefill_raw` 4079-4330 with
        `PrefillAdder`): prompt tokens prefilled (0: no prefill step, decode instead)."""
        if not self.running and self.chunked is None:
            self.batch_is_full = False  # scheduler.py 4093-4096
            if not self.queue:
                self.ratio = self.init_ratio  # idle: new_token_ratio_tracker.reset (5318)
        if (self.batch_is_full or not self.queue) and self.chunked is None:
            return 0  # scheduler.py 4098-4101
        if len(self.running) >= self.max_running and self.chunked is None:
            self.batch_is_full = True  # scheduler.py 4119-4126
            return 0
        was_empty = not self.running
        free = self.pool - self.used
        # PrefillAdder.__init__ (schedule_policy.py 672-680): the running batch's estimate.
        total_offset = self._reserved()
        current_offset = 0
        rem_chunk, rem_input = self.chunk, self.max_prefill
        prefilled: list[SimRequest] = []
        extended = 0

        def reserve(tokens: int, max_new: int) -> None:
            # prefill_budget.py 156-169 PrefillBudget.reserve (page 1).
            nonlocal total_offset, current_offset, rem_chunk, rem_input, extended
            total_offset += tokens + PAGE + max_new
            current_offset += tokens + PAGE
            rem_chunk -= tokens
            rem_input -= tokens
            extended += tokens

        if self.chunked is not None:
            # add_chunked_req (schedule_policy.py 1140-1222): the next chunk, up to what is left.
            req = self.chunked
            room = min(rem_chunk, int(free - total_offset))  # available_chunk_tokens 142-145
            room = room if room > 0 else rem_chunk
            left = req.prompt + req.generated - req.kv
            tokens = min(left, room)
            truncated = left > tokens
            reserve(tokens, 0 if truncated else min(req.max_new, CLIP_MAX_NEW))
            req.kv += tokens
            if not truncated:
                self.chunked = None
                prefilled.append(req)
        admitted = 0
        new_chunked: SimRequest | None = None
        for req in self.queue:
            if rem_input <= 0 or rem_chunk <= 0:
                break  # budget_state() OTHER (schedule_policy.py 874-893)
            if admitted + len(prefilled) >= self.max_running - len(self.running):
                self.batch_is_full = True  # get_num_allocatable_reqs (scheduler.py 4213-4221)
            if self.batch_is_full:
                break  # scheduler.py 4223-4227
            # add_one_req (schedule_policy.py 1405-1412): a retracted request re-prefills its
            # prompt and its output, and must fit with the FULL remaining max_new (clipped).
            extend = req.prompt + req.generated
            need = extend + min(max(req.max_new - req.generated, 0), CLIP_MAX_NEW) + PAGE
            if not need < free - total_offset:  # prefill_budget.py 128 check_prefill
                # scheduler.py 4280-4284: latched until the running batch shrinks.
                self.batch_is_full = bool(admitted or prefilled or self.running)
                break
            admitted += 1
            if extend > rem_chunk:
                # _select_prefill_admission (schedule_policy.py 1653-1682): this pass's chunk,
                # nothing reserved for its output until its last chunk.
                req.kv = rem_chunk
                reserve(rem_chunk, 0)
                new_chunked = req
            else:
                req.kv = extend
                reserve(extend, min(req.max_new, CLIP_MAX_NEW))  # schedule_policy.py 1636
                prefilled.append(req)
            if free - total_offset <= 0 or free - current_offset <= 0:
                self.batch_is_full = True  # budget_state() NO_TOKEN after the add
                break
        for _ in range(admitted):
            self.queue.popleft()
        if was_empty:
            # The latch was set on the empty running batch, which the prefilled batch replaces
            # when it is merged in (scheduler.py 3953-3957): the next pass admits again, now
            # charging the new requests as running ones.
            self.batch_is_full = False
        if new_chunked is not None:
            self.chunked = new_chunked
        self.used += extended
        self.prompt_tokens += extended
        # The prefill forward makes each completed request's first token.
        for req in prefilled:
            req.generated += 1
            self.decoded += 1
            if req.generated >= req.length:
                self._finish(req)
                self.finished_in_prefill.append(req)
            else:
                self.running.append(req)
        return extended

    def _finish(self, req: SimRequest) -> None:
        self.used -= req.kv
        req.kv = 0
        self.completion_tokens += req.generated

    def abort(self, rid: str | None) -> None:
        """`/abort_request`: the request leaves wherever it is (running, mid-prefill, queued),
        its KV is freed and its caller answered with what it made."""
        found = [r for r in self.running if r.rid == rid]
        for req in found:
            self.running.remove(req)
            self.batch_is_full = False
        if self.chunked is not None and self.chunked.rid == rid:
            found.append(self.chunked)
            self.chunked = None
        for req in list(self.queue):
            if req.rid == rid:
                self.queue.remove(req)
                found.append(req)
        for req in found:
            self.used -= req.kv
            req.kv = 0
            req.length = req.generated
            if req.done is not None and not req.done.done():
                req.done.set_result(None)

    def retract(self) -> list[SimRequest]:
        """update_running_batch (scheduler.py 4459-4545): if the next decode step's cells (one
        per running request) do not fit, retract_decode (schedule_batch.py 3451-3540)."""
        out: list[SimRequest] = []
        if self.pool - self.used >= len(self.running):
            return out
        # _get_decode_retraction_order (3542-3580): keep the most generated, then the shortest
        # prompt; retract from the other end, at least one, until the step fits.
        keep = sorted(self.running, key=lambda r: (r.generated, -r.prompt), reverse=True)
        while len(keep) > 1 and (not out or self.pool - self.used < len(keep)):
            req = keep.pop()
            self.used -= req.kv
            req.kv = 0
            req.retractions += 1
            out.append(req)
        self.running = keep
        self.queue.extend(out)  # _add_request_to_queue: waiting_queue.append (scheduler 3493)
        self.retracted_total += len(out)
        self.batch_is_full = False
        # estimate_new_token_ratio_after_retract (new_token_ratio_tracker.py 40-49).
        decoded = sum(r.generated for r in keep)
        total_max_new = sum(r.max_new for r in keep)
        self.ratio = min(1.0, (decoded + RETRACT_DECODE_STEPS * len(keep)) / (total_max_new + 1))
        return out

    def decode(self, steps: int) -> list[SimRequest]:
        """`steps` decode steps of the running batch (the caller keeps it within
        `steps_to_event()`); the requests that finished."""
        finished = []
        keep = []
        self.decoded += steps * len(self.running)
        self.used += steps * len(self.running)
        for req in self.running:
            req.generated += steps
            req.kv += steps
            if req.generated >= req.length:
                self._finish(req)
                finished.append(req)
            else:
                keep.append(req)
        self.running = keep
        if finished:
            self.batch_is_full = False  # the batch shrank (scheduler.py 4544-4545)
        self.ratio = max(self.min_ratio, self.ratio - self.decay * steps)  # decay_step per step
        return finished

    def steps_to_event(self) -> int:
        """Decode steps until a request finishes or the pool would overflow (at least 1)."""
        if not self.running:
            return 0
        to_finish = min(r.length - r.generated for r in self.running)
        room = (self.pool - self.used) // len(self.running)
        return max(1, min(to_finish, room))

    def step_time(self, prefilled: int) -> float:
        """A prefill step of `prefilled` prompt tokens, or (0) a decode step of the batch."""
        if prefilled:
            return self.a + self.p * prefilled
        return self.a + self.b * len(self.running)

    def metrics(self) -> str:
        usage = self.used / self.pool
        lines = {
            "token_usage": usage,
            "num_running_reqs": len(self.running),
            "num_queue_reqs": len(self.queue),
            "num_used_tokens": self.used,
            "max_total_num_tokens": self.pool,
            "num_retracted_reqs": self.last_retracted,
            "num_retracted_requests_total": self.retracted_total,
            "new_token_ratio": self.ratio,
            "gen_throughput": len(self.running) / self.step_time(0) if self.running else 0.0,
            "generation_tokens_total": self.completion_tokens,
            "prompt_tokens_total": self.prompt_tokens,
            "num_requests_total": self.requests_total,
        }
        return "".join(f'sglang:{k}{{model_name="sim"}} {v}\n' for k, v in lines.items())
