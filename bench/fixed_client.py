"""The approach draftgen replaces, as a baseline: a plain asyncio client with a fixed number of
requests in flight, that works through the datasets one after another and stops each after a
fixed number of samples. It calls SGLang's native `/generate` with `input_ids`, like draftgen,
so the only difference measured is how requests are scheduled.

Used by `bench/vs_standard_client.py` (same prompts, same output lengths) and, for its
sample-count cap, by `bench/budget_precision.py`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import httpx


@dataclass
class Request:
    input_ids: list[int]
    max_new_tokens: int
    sampling: dict | None = None
    """This request's own sampling parameters (e.g. another client's exact ones, seed included),
    over the run's."""
    tag: str = ""
    """Its timing's `dataset` instead of the list's name (requests of several datasets in one
    interleaved list)."""


@dataclass
class Timing:
    dataset: str
    sent: float
    done: float
    completion_tokens: int
    retractions: int = 0
    """`meta_info.num_retractions`: times the server retracted this request."""


@dataclass
class RunResult:
    timings: list[Timing] = field(default_factory=list)
    errors: int = 0

    @property
    def completion_tokens(self) -> int:
        return sum(t.completion_tokens for t in self.timings)

    @property
    def start(self) -> float:
        return min(t.sent for t in self.timings)

    @property
    def end(self) -> float:
        return max(t.done for t in self.timings)


async def run_fixed(
    url: str,
    datasets: list[tuple[str, list[Request]]],
    *,
    concurrency: int,
    max_samples: int | None = None,
    temperature: float = 1.0,
    ignore_eos: bool = True,
    sampling: dict | None = None,
) -> RunResult:
    """Each dataset in turn, `concurrency` requests in flight, at most `max_samples` requests
    per dataset; the next dataset starts when the previous one has fully drained. `sampling`:
    more sampling parameters for every request (e.g. stop ids)."""
    result = RunResult()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=3600, limits=limits) as client:
        for name, requests in datasets:
            todo = requests[:max_samples] if max_samples is not None else requests
            queue: asyncio.Queue[Request] = asyncio.Queue()
            for r in todo:
                queue.put_nowait(r)

            async def worker(name: str = name, queue: asyncio.Queue = queue) -> None:
                while True:
                    try:
                        r = queue.get_nowait()
                    except asyncio.QueueEmpty:
                        return
                    sent = time.time()
                    try:
                        rsp = await client.post(
                            "/generate",
                            json={
                                "input_ids": r.input_ids,
                                "sampling_params": {
                                    "max_new_tokens": r.max_new_tokens,
                                    "temperature": temperature,
                                    "ignore_eos": ignore_eos,
                                    **(sampling or {}),
                                    **(r.sampling or {}),
                                },
                            },
                        )
                        rsp.raise_for_status()
                        body = rsp.json()
                        n = len(body["output_ids"])
                        retracted = int(body.get("meta_info", {}).get("num_retractions") or 0)
                    except (httpx.HTTPError, KeyError, ValueError):
                        result.errors += 1
                        continue
                    result.timings.append(Timing(r.tag or name, sent, time.time(), n, retracted))

            await asyncio.gather(*(worker() for _ in range(concurrency)))
    return result
