"""One request's attempts: send it, retry what may succeed later (with a jittered, doubling
backoff), abort what timed out, take a server that failed out of admission until it is healthy,
and tell a success (`Answer`) from a refusal (`Reject`) from a request the run cancelled (None)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from draftgen.generator.prompts.samples import Reject
from draftgen.generator.sglang.client import (
    Aborted,
    BadResponse,
    Generation,
    RequestTimeout,
    ServerUnavailable,
    SGLangError,
)
from draftgen.generator.sglang.fleet import Fleet
from draftgen.generator.telemetry.metrics import GeneratorMetrics

if TYPE_CHECKING:  # an annotation only: scheduling sits above the SGLang side
    from draftgen.generator.scheduling.datasets import Flight

log = logging.getLogger("draftgen.generate")


@dataclass(frozen=True)
class Answer:
    """The server's generation, after `attempts` tries; `latency` is the last one's."""

    result: Generation
    attempts: int
    latency: float


def rid_base(sample_id: str, run_nonce: str) -> str:
    """The request id of a sample in this run, without the attempt number."""
    digest = hashlib.sha256(sample_id.encode()).hexdigest()[:16]
    return f"dg-{digest}-{run_nonce}"


async def attempt(
    flight: Flight,
    dataset: str,
    params: dict[str, Any],
    *,
    run_nonce: str,
    retries: int,
    backoff_base: float,
    fleet: Fleet,
    metrics: GeneratorMetrics,
) -> Answer | Reject | None:
    """Send `flight` up to `retries + 1` times; None once `flight.cancelled` is seen."""
    sample, server = flight.sample, flight.server
    base = rid_base(sample.id, run_nonce)
    last: SGLangError | None = None
    for n in range(retries + 1):
        if flight.cancelled:
            return None
        if n:
            delay = min(30.0, backoff_base * 2 ** (n - 1))
            await asyncio.sleep(delay * (0.5 + random.random()))
            if flight.cancelled:
                return None
            if not server.healthy:
                await fleet.recovered(server)
                # Retired: it came back as another model. The run's shutdown, which cancels
                # this flight, may not have run yet; the request must not go out meanwhile.
                if flight.cancelled or server.retired:
                    return None
        flight.rid = f"{base}-{n}"
        started = flight.sent_at = time.monotonic()
        try:
            rank = flight.pool.routed_rank if flight.pool is not None else None
            result = await server.client.generate(sample.input_ids, params, flight.rid, rank)
        except Aborted as err:
            if flight.cancelled:
                return None  # we asked for it: nothing partial is written
            last = err
        except (ServerUnavailable, RequestTimeout) as err:
            if flight.cancelled:
                return None
            last = err
            if isinstance(err, RequestTimeout):
                await server.abort_quietly(flight.rid)
            else:
                fleet.server_failed(server)
        except BadResponse as err:
            metrics.errors.labels(err.kind).inc()
            reason = "prompt_too_long" if err.prompt_too_long else "request_failed"
            return Reject(dataset, sample.source_index, sample.id, reason, str(err))
        else:
            return Answer(result, n + 1, time.monotonic() - started)
        metrics.errors.labels(last.kind).inc()
        log.warning(
            "%s attempt %d/%d on %s: %s", sample.id, n + 1, retries + 1, server.client.url, last
        )
    assert last is not None
    return Reject(
        dataset,
        sample.source_index,
        sample.id,
        "request_failed",
        f"{retries + 1} attempts; last: {last}",
        "abort" if isinstance(last, Aborted) else None,  # the quality report's finish reasons
    )
