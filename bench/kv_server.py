"""A GPU-like SGLang server for benchmarks: SGLang's KV accounting and scheduling, in process,
plugged into the generator as its httpx transport (a benchmark harness, not a test fake).

What it models, after SGLang 0.5's scheduler (`schedule_policy.PrefillAdder`,
`ScheduleBatch.retract_decode`):
- a KV pool of `pool` tokens; a running request holds its prompt plus what it generated;
- a FIFO queue; between decode steps requests are admitted from its head while the pool has room
  for the prompt plus a reservation of `new_token_ratio` × min(max_new_tokens, 4,096) for it and
  for every running request's remaining tokens (the ratio starts at 0.7, decays to 0.098 over
  600 steps and jumps back up after a retraction), at most `chunk` prompt tokens per step;
- a decode step that would overflow the pool retracts the request with the fewest generated
  tokens first (its KV is freed, it goes back to the head of the queue and re-prefills later);
- step time = a + b × running + prefill tokens × p: throughput grows with the running batch as on
  a GPU. Defaults from the seed deployment (field-facts lesson 4: ~17 tok/s per request at ~40
  running, ~12.9 at 72 running, pool 159,277 tokens).

Run it under `virtual_time.run` so that hours of decode take seconds; `/metrics` reports
`sglang:token_usage`, `num_running_reqs`, `num_queue_reqs`, `num_retracted_reqs`, ... like SGLang.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

# Seed figures: 1 / (a + 40 b) = 17 tok/s, 1 / (a + 72 b) = 12.9 tok/s.
STEP_A = 0.0355
STEP_B = 0.000584
PREFILL_SECONDS_PER_TOKEN = 5e-5  # 20k prompt tokens/s
SEED_POOL = 159_277
INIT_RATIO, MIN_RATIO_FACTOR, DECAY_STEPS, CLIP_MAX_NEW = 0.7, 0.14, 600, 4096
RETRACT_DECODE_STEPS = 20


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

    @property
    def held(self) -> int:
        return self.prompt + self.generated


@dataclass
class Readings:
    """Time-weighted sums for means over a window (the harness picks the window)."""

    samples: list[tuple[float, float, int, int, int, float]] = field(default_factory=list)
    """(time, token_usage, running, queue, tokens decoded so far, share of the pool
    reserved for the running requests' remaining tokens) once per wake."""


class KVScheduler:
    """SGLang's scheduler loop over a KV pool; pure accounting, no I/O (tested on its own)."""

    def __init__(
        self,
        pool: int = SEED_POOL,
        *,
        max_running: int = 1024,
        chunk: int = 8192,
        a: float = STEP_A,
        b: float = STEP_B,
        p: float = PREFILL_SECONDS_PER_TOKEN,
    ) -> None:
        self.pool, self.max_running, self.chunk = pool, max_running, chunk
        self.a, self.b, self.p = a, b, p
        self.queue: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.used = 0
        self.ratio = INIT_RATIO
        self.min_ratio = INIT_RATIO * MIN_RATIO_FACTOR
        self.decay = (INIT_RATIO - self.min_ratio) / DECAY_STEPS
        self.retracted_total = 0
        self.last_retracted = 0
        self.completion_tokens = 0
        self.decoded = 0
        """Tokens decoded so far, finished or not (a steady rate, unlike finished requests)."""
        self.prompt_tokens = 0
        self.requests_total = 0

    # ---- one scheduler iteration -----------------------------------------------------------

    def _reserved(self) -> float:
        return sum(
            min(r.max_new - r.generated, CLIP_MAX_NEW) * (1.0 if r.ignore_eos else self.ratio)
            for r in self.running
        )

    def admit(self) -> int:
        """Prefill from the head of the queue while the pool has room; prompt tokens prefilled."""
        budget = self.chunk
        rem = self.pool - self.used - self._reserved()
        extended = 0
        while self.queue and len(self.running) < self.max_running:
            req = self.queue[0]
            need_now = req.held
            need = need_now + min(req.max_new - req.generated, CLIP_MAX_NEW) * self.ratio
            if need > rem or need_now > self.pool - self.used:
                break
            if extended and extended + need_now > budget:
                break  # chunked prefill: the rest next step
            self.queue.popleft()
            self.running.append(req)
            self.used += need_now
            rem -= need
            extended += need_now
        return extended

    def retract(self) -> list[SimRequest]:
        """Free requests until one decode step fits (fewest generated tokens first)."""
        out: list[SimRequest] = []
        if self.used + len(self.running) <= self.pool:
            return out
        self.running.sort(key=lambda r: (r.generated, -r.prompt), reverse=True)
        while len(self.running) > 1 and self.used + len(self.running) > self.pool:
            req = self.running.pop()
            self.used -= req.held
            req.retractions += 1
            out.append(req)
        for req in reversed(out):
            self.queue.appendleft(req)
        self.retracted_total += len(out)
        total_max_new = sum(r.max_new for r in self.running) or 1
        decoded = sum(r.generated for r in self.running)
        estimate = (decoded + RETRACT_DECODE_STEPS * len(self.running)) / total_max_new
        self.ratio = min(1.0, max(self.ratio, estimate))
        return out

    def decode(self, steps: int) -> list[SimRequest]:
        """`steps` decode steps of the running batch (the caller keeps it below the next event);
        the requests that finished."""
        finished = []
        keep = []
        self.decoded += steps * len(self.running)
        for req in self.running:
            req.generated += steps
            if req.generated >= req.length:
                self.used -= req.held - steps  # freed, including what it just grew
                finished.append(req)
                self.completion_tokens += req.generated
            else:
                keep.append(req)
        self.used += steps * len(keep)
        self.running = keep
        self.ratio = max(self.min_ratio, self.ratio - self.decay * steps)
        return finished

    def steps_to_event(self) -> int:
        """Decode steps until a request finishes or the pool would overflow (at least 1)."""
        if not self.running:
            return 0
        to_finish = min(r.length - r.generated for r in self.running)
        room = (self.pool - self.used) // len(self.running)
        return max(1, min(to_finish, room))

    def step_time(self, prefilled: int) -> float:
        return self.a + self.b * len(self.running) + self.p * prefilled

    def metrics(self) -> str:
        usage = self.used / self.pool
        lines = {
            "token_usage": usage,
            "num_running_reqs": len(self.running),
            "num_queue_reqs": len(self.queue),
            "num_used_tokens": self.used,
            "max_total_num_tokens": self.pool,
            "num_retracted_reqs": self.last_retracted,
            "new_token_ratio": self.ratio,
            "gen_throughput": len(self.running) / self.step_time(0) if self.running else 0.0,
            "generation_tokens_total": self.completion_tokens,
            "prompt_tokens_total": self.prompt_tokens,
            "num_requests_total": self.requests_total,
        }
        return "".join(f'sglang:{k}{{model_name="sim"}} {v}\n' for k, v in lines.items())


class KVServer(httpx.AsyncBaseTransport):
    """`KVScheduler` behind SGLang's HTTP API. `length_of(body)` gives each request's completion
    length from its `/generate` body (the harness draws it per sample, so every client sees the
    same work)."""

    def __init__(
        self,
        length_of: Callable[[dict], int],
        scheduler: KVScheduler | None = None,
        max_steps_per_wake: int = 64,
    ) -> None:
        self.sched = scheduler or KVScheduler()
        self.length_of = length_of
        self.readings = Readings()
        self._arrived = asyncio.Event()
        self._loop_task: asyncio.Task | None = None
        self._max_steps = max_steps_per_wake
        self.closed = False

    async def _loop(self) -> None:
        s = self.sched
        loop = asyncio.get_running_loop()
        while not self.closed:
            prefilled = s.admit()
            if prefilled:
                s.prompt_tokens += prefilled
            if not s.running:
                self._arrived.clear()
                if not s.queue:
                    await self._arrived.wait()
                continue
            retracted = s.retract()
            s.last_retracted = len(retracted)
            # With a queue, admission can change at every step (the ratio decays): shorter jumps.
            steps = min(s.steps_to_event(), self._max_steps // 4 if s.queue else self._max_steps)
            started = loop.time()
            self._arrived.clear()
            dt = s.step_time(prefilled) + s.step_time(0) * (steps - 1)
            first = s.step_time(prefilled)
            try:
                await asyncio.wait_for(self._arrived.wait(), dt)
                # A request arrived mid-way: only the steps that fully elapsed happened (at
                # least the one under way, which it cannot join).
                elapsed = loop.time() - started
                if elapsed < first:
                    await asyncio.sleep(first - elapsed)
                    elapsed = first
                steps = max(1, min(steps, 1 + int((elapsed - first) / s.step_time(0))))
            except TimeoutError:
                pass
            for req in s.decode(steps):
                if req.done is not None and not req.done.done():
                    req.done.set_result(None)
            self.readings.samples.append(
                (
                    loop.time(),
                    s.used / s.pool,
                    len(s.running),
                    len(s.queue),
                    s.decoded,
                    s._reserved() / s.pool,
                )
            )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if self._loop_task is None:
            self._loop_task = asyncio.create_task(self._loop())
        if path == "/generate":
            return await self._generate(json.loads(await request.aread()))
        if path == "/metrics":
            return httpx.Response(200, text=self.sched.metrics())
        if path in ("/health_generate", "/health"):
            return httpx.Response(200, text="")
        if path in ("/get_server_info", "/server_info"):
            s = self.sched
            return httpx.Response(
                200,
                json={
                    "max_total_num_tokens": s.pool,
                    "max_running_requests": s.max_running,
                    "max_req_input_len": s.pool - 1,
                    "context_length": s.pool,
                    "chunked_prefill_size": s.chunk,
                },
            )
        if path == "/abort_request":
            rid = json.loads(await request.aread()).get("rid")
            self._abort(rid)
            return httpx.Response(200, json={})
        return httpx.Response(404, json={"detail": "Not Found"})

    def _abort(self, rid: str | None) -> None:
        s = self.sched
        for req in list(s.running):
            if req.rid == rid:
                s.running.remove(req)
                s.used -= req.held
                req.length = req.generated
                assert req.done is not None
                req.done.set_result(None)
        for req in list(s.queue):
            if req.rid == rid:
                s.queue.remove(req)
                req.length = req.generated
                assert req.done is not None
                req.done.set_result(None)

    async def _generate(self, body: dict) -> httpx.Response:
        loop = asyncio.get_running_loop()
        rid = body["rid"]
        prompt = len(body["input_ids"])
        max_new = body["sampling_params"]["max_new_tokens"]
        length = max(1, min(max_new, self.length_of(body)))
        req = SimRequest(rid, prompt, length, max_new, done=loop.create_future())
        req.ignore_eos = bool(body["sampling_params"].get("ignore_eos"))
        req.started = loop.time()
        self.sched.queue.append(req)
        self.sched.requests_total += 1
        self._arrived.set()
        await req.done
        finish = (
            {"type": "length", "length": max_new}
            if req.generated >= max_new
            else {"type": "stop", "matched": 163_586}
        )
        return httpx.Response(
            200,
            json={
                "output_ids": [7] * req.generated,
                "meta_info": {
                    "id": rid,
                    "finish_reason": finish,
                    "prompt_tokens": prompt,
                    "completion_tokens": req.generated,
                    "cached_tokens": 0,
                    "num_retractions": req.retractions,
                    "e2e_latency": loop.time() - req.started,
                },
            },
        )

    async def aclose(self) -> None:
        self.closed = True
        self._arrived.set()
        if self._loop_task is not None:
            self._loop_task.cancel()
