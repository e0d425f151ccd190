"""A GPU-like SGLang server for benchmarks: `kv_scheduler.KVScheduler` (SGLang's KV accounting
and scheduling, read from its source) behind SGLang's HTTP API, plugged into the generator as its
httpx transport (a benchmark harness, not a test fake).

Run it under `virtual_time.run` so that hours of decode take seconds; `/metrics` reports
`sglang:token_usage`, `num_running_reqs`, `num_queue_reqs`, `num_retracted_reqs`, ... like SGLang.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
from kv_scheduler import SEED_POOL, KVScheduler, Readings, SimRequest

__all__ = ["SEED_POOL", "KVScheduler", "KVServer", "SimRequest"]


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

    def _answer(self, finished: list[SimRequest]) -> None:
        for req in finished:
            if req.done is not None and not req.done.done():
                req.done.set_result(None)

    def _read(self, now: float) -> None:
        s = self.sched
        self.readings.samples.append(
            (now, s.used / s.pool, len(s.running), len(s.queue), s.decoded, s._reserved() / s.pool)
        )

    async def _loop(self) -> None:
        s = self.sched
        loop = asyncio.get_running_loop()
        while not self.closed:
            prefilled = s.admit()
            if prefilled:
                # A prefill step of its own; its answers (one-token requests) come after it.
                await asyncio.sleep(s.step_time(prefilled))
                self._answer(s.finished_in_prefill)
                s.finished_in_prefill.clear()
                self._read(loop.time())
                continue
            if not s.running:
                self._arrived.clear()
                if not s.queue and s.chunked is None:
                    await self._arrived.wait()
                continue
            retracted = s.retract()
            s.last_retracted = len(retracted)
            # Admission is tried again only when the batch shrinks (or, while the queue is
            # empty and not latched, when a request arrives): jump to the next such event.
            steps = min(s.steps_to_event(), self._max_steps)
            listening = not s.batch_is_full
            started = loop.time()
            self._arrived.clear()
            step = s.step_time(0)
            if listening:
                try:
                    await asyncio.wait_for(self._arrived.wait(), step * steps)
                    # A request arrived mid-way: only the steps that fully elapsed happened (at
                    # least the one under way, which it cannot join).
                    elapsed = loop.time() - started
                    if elapsed < step:
                        await asyncio.sleep(step - elapsed)
                        elapsed = step
                    steps = max(1, min(steps, int(elapsed / step)))
                except TimeoutError:
                    pass
            else:
                await asyncio.sleep(step * steps)
            self._answer(s.decode(steps))
            self._read(loop.time())

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
                    "max_prefill_tokens": s.max_prefill,
                    "schedule_conservativeness": s.schedule_conservativeness,
                },
            )
        if path == "/abort_request":
            rid = json.loads(await request.aread()).get("rid")
            self._abort(rid)
            return httpx.Response(200, json={})
        return httpx.Response(404, json={"detail": "Not Found"})

    def _abort(self, rid: str | None) -> None:
        self.sched.abort(rid)

    async def _generate(self, body: dict) -> httpx.Response:
        """One request, or a batch (`input_ids` a list of lists): SGLang hands a pre-tokenized
        batch to its scheduler as one message (tokenizer_manager `_send_batch_request`), so all
        of it is queued before the next admission pass."""
        ids = body["input_ids"]
        if ids and isinstance(ids[0], list):
            n = len(ids)
            params, rids = body["sampling_params"], body["rid"]
            items = [
                {
                    **body,
                    "input_ids": ids[i],
                    "sampling_params": params[i] if isinstance(params, list) else params,
                    "rid": rids[i],
                }
                for i in range(n)
            ]
            reqs = [self._enqueue(item) for item in items]
            self._arrived.set()
            await asyncio.gather(*(r.done for r in reqs if r.done is not None))
            return httpx.Response(200, json=[self._answer_of(r) for r in reqs])
        req = self._enqueue(body)
        self._arrived.set()
        assert req.done is not None
        await req.done
        return httpx.Response(200, json=self._answer_of(req))

    def _enqueue(self, body: dict) -> SimRequest:
        loop = asyncio.get_running_loop()
        max_new = body["sampling_params"]["max_new_tokens"]
        length = max(1, min(max_new, self.length_of(body)))
        req = SimRequest(
            body["rid"], len(body["input_ids"]), length, max_new, done=loop.create_future()
        )
        req.ignore_eos = bool(body["sampling_params"].get("ignore_eos"))
        req.started = loop.time()
        self.sched.queue.append(req)
        self.sched.requests_total += 1
        return req

    def _answer_of(self, req: SimRequest) -> dict:
        finish = (
            {"type": "length", "length": req.max_new}
            if req.generated >= req.max_new
            else {"type": "stop", "matched": 163_586}
        )
        return {
            "output_ids": [7] * req.generated,
            "meta_info": {
                "id": req.rid,
                "finish_reason": finish,
                "prompt_tokens": req.prompt,
                "completion_tokens": req.generated,
                "cached_tokens": 0,
                "num_retractions": req.retractions,
                "e2e_latency": asyncio.get_running_loop().time() - req.started,
            },
        }

    async def aclose(self) -> None:
        self.closed = True
        self._arrived.set()
        if self._loop_task is not None:
            self._loop_task.cancel()
