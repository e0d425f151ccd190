"""The benchmarks' GPU-like SGLang server with d data-parallel attention ranks: d
`kv_scheduler.KVScheduler`s (a KV pool and a scheduler each) behind one SGLang HTTP API, plugged
into the generator as its httpx transport, run under `virtual_time.run`.

What it models, from SGLang 0.5.23 (`managers/data_parallel_controller.py`):
- dispatch: a request with `routed_dp_rank` goes to that rank (`maybe_external_dp_rank_routing`);
  otherwise `--load-balance-method`: `round_robin` (a counter over the ranks), `total_requests`
  (the rank with the fewest running + waiting requests), `total_tokens` (the fewest tokens, ties
  by requests; a request adds its prompt), each `DPBudget.dispatch` adding its guess to the
  chosen rank until the next refresh from the ranks' loads (at most every 20 ms,
  `refresh_load_budget`; SGLang's load snapshots can be older, which this leaves out in its
  favour). A rank's tokens here: the KV it holds plus its queue's prompts;
- the ranks step together (the MoE layers gather every rank's batch), so a decode step lasts
  `a × weight_factor + b × d × (the busiest rank's running requests)`: the batch is padded to
  the busiest rank, and every GPU reads `weight_factor` × the weights it reads under plain TP
  (the attention weights held at attention-TP tp/d: the planner's figure). A prefill on one rank
  is one forward for all: the others decode a step in it, which then also costs their padded
  batch. At d = 1 this is `kv_server.KVServer`'s step;
- `/get_server_info`: rank 0's pool at the top level and one `internal_states` entry per rank;
  `/metrics`: each rank's gauges with its `dp_rank` label.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
from kv_scheduler import KVScheduler, SimRequest

METHODS = ("round_robin", "total_requests", "total_tokens")
REFRESH_SECONDS = 0.02


class DPKVServer(httpx.AsyncBaseTransport):
    """`schedulers` (one per rank) behind SGLang's HTTP API; `honour_routing=False` ignores
    `routed_dp_rank` (what a client that does not pin requests gets: SGLang's dispatch)."""

    def __init__(
        self,
        length_of: Callable[[dict], int],
        schedulers: list[KVScheduler],
        *,
        method: str = "round_robin",
        weight_factor: float = 1.0,
        honour_routing: bool = True,
        max_steps_per_wake: int = 64,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"load balance method {method!r}: one of {METHODS}")
        self.ranks = schedulers
        self.length_of = length_of
        self.method = method
        self.weight_factor = weight_factor
        self.honour_routing = honour_routing
        self.samples: list[tuple[float, list[float], list[int], list[int], int]] = []
        """(time, KV usage per rank, running per rank, queued per rank, tokens decoded)."""
        self._counter = 0
        self._budget = [[0.0, 0.0] for _ in schedulers]  # per rank: requests, tokens
        self._refreshed = float("-inf")
        self._arrived = asyncio.Event()
        self._loop_task: asyncio.Task | None = None
        self._max_steps = max_steps_per_wake
        self.closed = False
        self.routed = 0
        """Requests that came pinned to a rank."""

    # ---- the ranks' common clock ----------------------------------------------------------

    def decode_step(self) -> float:
        s = self.ranks[0]
        busiest = max(len(r.running) for r in self.ranks)
        return s.a * self.weight_factor + s.b * len(self.ranks) * busiest

    def prefill_step(self, tokens: int) -> float:
        s = self.ranks[0]
        return s.a * self.weight_factor + s.p * tokens

    def _answer(self, finished: list[SimRequest]) -> None:
        for req in finished:
            if req.done is not None and not req.done.done():
                req.done.set_result(None)

    def _read(self, now: float) -> None:
        self.samples.append(
            (
                now,
                [r.used / r.pool for r in self.ranks],
                [len(r.running) for r in self.ranks],
                [len(r.queue) for r in self.ranks],
                sum(r.decoded for r in self.ranks),
            )
        )

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.closed:
            prefilled = [r.admit() for r in self.ranks]
            if any(prefilled):
                # One forward for every rank: the ranks that prefill nothing decode a step in it
                # (their tokens join the gathered batch).
                decoding = [r for r, n in zip(self.ranks, prefilled) if not n and r.running]
                for r in decoding:
                    r.last_retracted = len(r.retract())
                step = self.prefill_step(max(prefilled))
                if decoding:
                    step += (
                        self.ranks[0].b * len(self.ranks) * max(len(r.running) for r in decoding)
                    )
                await asyncio.sleep(step)
                for r in self.ranks:
                    self._answer(r.finished_in_prefill)
                    r.finished_in_prefill.clear()
                for r in decoding:
                    self._answer(r.decode(1))
                self._read(loop.time())
                continue
            busy = [r for r in self.ranks if r.running]
            if not busy:
                self._arrived.clear()
                if not any(r.queue or r.chunked is not None for r in self.ranks):
                    await self._arrived.wait()
                continue
            for r in busy:
                r.last_retracted = len(r.retract())
            steps = min(min(r.steps_to_event() for r in busy), self._max_steps)
            listening = any(not r.batch_is_full for r in self.ranks)
            started = loop.time()
            self._arrived.clear()
            step = self.decode_step()
            if listening:
                try:
                    await asyncio.wait_for(self._arrived.wait(), step * steps)
                    elapsed = loop.time() - started
                    if elapsed < step:
                        await asyncio.sleep(step - elapsed)
                        elapsed = step
                    steps = max(1, min(steps, int(elapsed / step)))
                except TimeoutError:
                    pass
            else:
                await asyncio.sleep(step * steps)
            for r in busy:
                self._answer(r.decode(steps))
            self._read(loop.time())

    # ---- dispatch (data_parallel_controller.py) -------------------------------------------

    def _rank_for(self, body: dict) -> int:
        pinned = body.get("routed_dp_rank")
        if pinned is not None and self.honour_routing:
            self.routed += 1
            return int(pinned)
        if self.method == "round_robin":
            rank = self._counter % len(self.ranks)
            self._counter += 1
            return rank
        now = asyncio.get_running_loop().time()
        if now - self._refreshed >= REFRESH_SECONDS:
            self._refreshed = now
            for b, r in zip(self._budget, self.ranks):
                b[0] = len(r.running) + len(r.queue)
                b[1] = r.used + sum(q.prompt for q in r.queue)
        if self.method == "total_requests":
            rank = min(range(len(self.ranks)), key=lambda i: self._budget[i][0])
        else:
            rank = min(range(len(self.ranks)), key=lambda i: tuple(self._budget[i][::-1]))
        self._budget[rank][0] += 1
        self._budget[rank][1] += len(body["input_ids"])
        return rank

    # ---- HTTP -----------------------------------------------------------------------------

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if self._loop_task is None:
            self._loop_task = asyncio.create_task(self._loop())
        if path == "/generate":
            return await self._generate(json.loads(await request.aread()))
        if path == "/metrics":
            return httpx.Response(
                200,
                text="".join(
                    r.metrics().replace('{model_name="sim"}', f'{{model_name="sim",dp_rank="{i}"}}')
                    for i, r in enumerate(self.ranks)
                ),
            )
        if path in ("/health_generate", "/health"):
            return httpx.Response(200, text="")
        if path in ("/get_server_info", "/server_info"):
            s = self.ranks[0]
            return httpx.Response(
                200,
                json={
                    "max_total_num_tokens": s.pool,  # rank 0's only, as SGLang reports it
                    "max_running_requests": s.max_running,
                    "max_req_input_len": min(r.pool for r in self.ranks) - 1,
                    "context_length": min(r.pool for r in self.ranks),
                    "dp_size": len(self.ranks),
                    "internal_states": [
                        {
                            "effective_max_running_requests_per_dp": r.max_running,
                            "memory_usage": {"token_capacity": r.pool},
                        }
                        for r in self.ranks
                    ],
                },
            )
        if path == "/abort_request":
            self._abort(json.loads(await request.aread()).get("rid"))
            return httpx.Response(200, json={})
        return httpx.Response(404, json={"detail": "Not Found"})

    def _abort(self, rid: str | None) -> None:
        for s in self.ranks:
            s.abort(rid)

    async def _generate(self, body: dict) -> httpx.Response:
        loop = asyncio.get_running_loop()
        max_new = body["sampling_params"]["max_new_tokens"]
        length = max(1, min(max_new, self.length_of(body)))
        req = SimRequest(
            body["rid"], len(body["input_ids"]), length, max_new, done=loop.create_future()
        )
        req.started = loop.time()
        rank = self.ranks[self._rank_for(body)]
        rank.queue.append(req)
        rank.requests_total += 1
        self._arrived.set()
        assert req.done is not None
        await req.done
        finish = (
            {"type": "length", "length": req.max_new}
            if req.generated >= req.max_new
            else {"type": "stop", "matched": 163_586}
        )
        return httpx.Response(
            200,
            json={
                "output_ids": [7] * req.generated,
                "meta_info": {
                    "id": req.rid,
                    "finish_reason": finish,
                    "prompt_tokens": req.prompt,
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
