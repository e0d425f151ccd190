"""The benchmarks' simulated GPU server (`bench/kv_server.py`) keeps SGLang's KV accounting:
its own rules with plain numbers, then the same burst of requests against it and against the
real CPU SGLang server, compared on what both show (admission, retraction, pool accounting).
No timing is asserted: only counts and tokens."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from draftgen.generator.client import parse_metrics

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench_module(name: str) -> ModuleType:
    """A script of bench/ (not a package: the scripts run as `python bench/x.py`)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


virtual_time = _bench_module("virtual_time")
kv_server = _bench_module("kv_server")
KVScheduler, KVServer, SimRequest = kv_server.KVScheduler, kv_server.KVServer, kv_server.SimRequest

PROMPT, NEW, BURST = 500, 500, 12


def _burst(pool: int) -> KVScheduler:
    s = KVScheduler(pool)
    for i in range(BURST):
        s.queue.append(SimRequest(f"r{i}", PROMPT, NEW, NEW))
    return s


def test_admission_reserves_part_of_each_requests_max_new_tokens():
    s = _burst(4096)
    s.admit()
    # 500 prompt + 0.7 × 500 reserved = 850 each: four fit in 4,096, the fifth does not.
    assert (len(s.running), len(s.queue), s.used) == (4, BURST - 4, 4 * PROMPT)


def test_decode_that_would_overflow_retracts_the_least_advanced_request():
    s = _burst(4096)
    s.admit()
    s.running[0].generated = 10  # ahead of the others: kept
    s.used += 10
    retracted_at = None
    for step in range(2000):
        s.admit()
        if s.retract():
            retracted_at = step
            break
        s.decode(1)
        assert s.used == sum(r.held for r in s.running) <= s.pool
    assert retracted_at is not None
    assert s.queue[0].generated > 0 and s.queue[0].retractions == 1  # back at the head
    assert all(r.generated >= s.queue[0].generated for r in s.running)
    assert s.used + len(s.running) <= s.pool


def test_every_request_completes_exactly_and_the_pool_empties():
    async def go():
        server = KVServer(lambda body: NEW, KVScheduler(4096))
        async with httpx.AsyncClient(transport=server, base_url="http://sim") as client:
            answers = await asyncio.gather(*(_generate(client, i) for i in range(BURST)))
            metrics = parse_metrics((await client.get("/metrics")).text)
        await server.aclose()
        return answers, metrics, server

    (answers, metrics, server), _ = virtual_time.run(go())
    assert [a["meta_info"]["completion_tokens"] for a in answers] == [NEW] * BURST
    assert sum(a["meta_info"]["num_retractions"] for a in answers) > 0
    assert metrics["token_usage"] == 0 and metrics["num_running_reqs"] == 0
    assert max(r[1] for r in server.readings.samples) <= 1.0


async def _generate(client: httpx.AsyncClient, i: int) -> dict:
    # Not ignore_eos: SGLang reserves a fixed-length request's whole remaining length (no
    # retraction ever), and draftgen's requests are not fixed-length.
    body = {
        "input_ids": [1000 + (i * 7 + k) % 5000 for k in range(PROMPT)],
        "sampling_params": {"max_new_tokens": NEW, "temperature": 0.0},
        "rid": f"burst-{i}",
        "stream": False,
    }
    r = await client.post("/generate", json=body, timeout=600)
    r.raise_for_status()
    return r.json()


def _run_burst_and_watch(base_url: str, transport=None) -> tuple[list[dict], list[dict]]:
    """The burst against one server, its `/metrics` read between answers."""
    samples: list[dict] = []

    async def go():
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            tasks = [asyncio.create_task(_generate(client, i)) for i in range(BURST)]
            while not all(t.done() for t in tasks):
                samples.append(parse_metrics((await client.get("/metrics")).text))
                await asyncio.sleep(0.05)
            return [t.result() for t in tasks]

    if transport is not None:
        answers, _ = virtual_time.run(go())
    else:
        answers = asyncio.run(go())
    return answers, samples


@pytest.mark.sglang
def test_simulated_pool_behaves_like_the_real_servers(sglang_server):
    """The same burst on both, each request as long as the real server made it: the same first
    wave admitted, retraction on both or neither, the pool filled and never overfilled, the
    same peak batch (±1: the real server is read every 50 ms, the simulation at every step)."""
    info = httpx.get(f"{sglang_server.url}/get_server_info", timeout=30).json()
    pool = int(info["max_total_num_tokens"])
    real, real_metrics = _run_burst_and_watch(sglang_server.url)
    lengths = {a["meta_info"]["id"]: a["meta_info"]["completion_tokens"] for a in real}
    by_rid = {f"burst-{i}": lengths.get(f"burst-{i}") for i in range(BURST)}
    if None in by_rid.values():  # the server names requests by its own ids: keep the order
        by_rid = {f"burst-{i}": a["meta_info"]["completion_tokens"] for i, a in enumerate(real)}
    chunk = int(info.get("chunked_prefill_size") or 8192)
    sim_server = KVServer(lambda body: by_rid[body["rid"]], KVScheduler(pool, chunk=chunk))
    sim, sim_metrics = _run_burst_and_watch("http://sim", sim_server)

    assert [a["meta_info"]["completion_tokens"] for a in sim] == list(by_rid.values())
    # Admission: 500 prompt + 0.7 × 500 reserved each, four fit, the rest queue (the real server
    # counts requests still in chunked prefill as neither running nor queued: compare queues).
    first = next(m for m in real_metrics if m.get("num_queue_reqs", 0) > 0)
    sim_first = next(m for m in sim_metrics if m.get("num_queue_reqs", 0) > 0)
    assert first["num_queue_reqs"] == sim_first["num_queue_reqs"] == BURST - 4
    # Retraction: on both or on neither.
    real_retractions = sum(a["meta_info"].get("num_retractions", 0) for a in real)
    sim_retractions = sum(a["meta_info"]["num_retractions"] for a in sim)
    assert (real_retractions > 0) == (sim_retractions > 0), (real_retractions, sim_retractions)
    # Pool accounting: never past the pool; the same peak batch.
    for metrics in (real_metrics, sim_metrics):
        assert max(m.get("token_usage", 0) for m in metrics) <= 1.0
    real_peak = max(m.get("num_running_reqs", 0) for m in real_metrics)
    sim_peak = max(m.get("num_running_reqs", 0) for m in sim_metrics)
    assert abs(real_peak - sim_peak) <= 1, (real_peak, sim_peak, real_retractions, lengths)
