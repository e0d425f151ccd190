"""The benchmarks' simulated GPU server (`bench/kv_server.py`) keeps SGLang's KV accounting:
its own rules with plain numbers (SGLang 0.5.23's scheduler, cited in the module), then the
same scripted burst against it and against a real CPU SGLang server, compared on what both
show (admission, the queue, pool accounting, retraction). No timing is asserted: only counts
and tokens."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from draftgen.generator.sglang.client import parse_metrics

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench_module(name: str) -> ModuleType:
    """A script of bench/ (not a package: the scripts run as `python bench/x.py`)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    sys.modules.setdefault(name, module)  # how the scripts import each other (`from kv_scheduler`)
    spec.loader.exec_module(module)
    return module


virtual_time = _bench_module("virtual_time")
_bench_module("kv_scheduler")
kv_server = _bench_module("kv_server")
KVScheduler, KVServer, SimRequest = kv_server.KVScheduler, kv_server.KVServer, kv_server.SimRequest


def _queued(s, *reqs: tuple[int, int]) -> None:
    for i, (prompt, max_new) in enumerate(reqs):
        s.queue.append(SimRequest(f"r{i}", prompt, max_new, max_new))


def _run_until(s, stop) -> None:
    """SGLang's loop (prefill pass, else retract check and decode) until `stop(s)`."""
    for _ in range(100_000):
        if stop(s):
            return
        if s.admit():
            continue
        s.retract()
        s.decode(1)
    raise AssertionError("never stopped")


def test_a_new_request_is_charged_its_whole_max_new_and_the_pass_adds_them_up():
    s = KVScheduler(2048)
    _queued(s, *[(100, 400)] * 8)
    assert s.admit() == 400
    # 100 + 400 + 1 page = 501 each: four fit below 2,048, the fifth does not (charging a new
    # request 0.7 × max_new, 380 each, would admit five).
    assert (len(s.running), len(s.queue), s.used) == (4, 4, 400)
    assert all(r.generated == 1 for r in s.running)  # the prefill made each first token
    # The batch was empty: nothing latched, the next pass tries again, the four now charged as
    # running requests: 0.7 × the 399 tokens each may still generate.
    assert not s.batch_is_full
    assert s._reserved() == pytest.approx(4 * 0.7 * 399)
    assert 501 < 2048 - 400 - s._reserved() < 2 * 501
    assert s.admit() == 100
    assert (len(s.running), len(s.queue)) == (5, 3) and s.batch_is_full


def test_no_admission_is_tried_again_until_the_batch_shrinks():
    s = KVScheduler(8192)
    for i in range(8):  # they will stop at 300 tokens; SGLang cannot know that
        s.queue.append(SimRequest(f"r{i}", 100, 300, 1500))
    s.admit()
    s.admit()
    assert (len(s.running), len(s.queue)) == (6, 2) and s.batch_is_full
    _run_until(s, lambda s: s.running[0].generated == 100)
    assert s.pool - s.used - s._reserved() > 1601  # the next would fit now, the ratio decayed
    assert s.admit() == 0 and len(s.queue) == 2  # but nothing shrank the batch
    _run_until(s, lambda s: len(s.running) < 6)
    assert not s.batch_is_full and s.admit() > 0


def test_a_long_prompt_is_prefilled_in_chunks_charged_only_its_chunk():
    s = KVScheduler(8192, chunk=1000)
    _queued(s, (2500, 100), (50, 100))
    assert s.admit() == 1000
    assert s.chunked is not None and not s.running and len(s.queue) == 1
    assert s.used == 1000 and s.chunked.generated == 0
    assert s.admit() == 1000  # the next chunk takes the whole pass
    assert s.admit() == 550  # the last 500, then the short one in the same pass
    assert s.chunked is None and len(s.running) == 2 and s.used == 2550
    assert all(r.generated == 1 for r in s.running)


def test_an_overflowing_decode_retracts_the_least_advanced_to_the_back_of_the_queue():
    s = KVScheduler(1024)
    _queued(s, *[(30, 200)] * 7)
    _run_until(s, lambda s: s.pool - s.used < len(s.running))  # the next step does not fit
    assert (len(s.running), len(s.queue)) == (5, 2)  # four at once, one more, two wait
    assert s.admit() == 0
    out = s.retract()
    retracted = s.queue[-1]
    assert out == [retracted] and s.retracted_total == 1
    assert retracted.retractions == 1 and retracted.kv == 0 and retracted.generated > 0
    assert s.queue[0].generated == 0  # the ones that never ran stay ahead of it
    # The fewest generated, then the longest prompt; among equals the last one admitted.
    assert retracted.rid == "r4" and all(r.generated >= retracted.generated for r in s.running)
    assert s.used == sum(r.kv for r in s.running) and s.used + len(s.running) <= s.pool
    # The ratio is re-estimated from the requests left: (decoded + 20 each) / (Σ max_new + 1).
    left = s.running
    expected = (sum(r.generated for r in left) + 20 * len(left)) / (
        sum(r.max_new for r in left) + 1
    )
    assert s.ratio == pytest.approx(min(1.0, expected))


def test_schedule_conservativeness_scales_the_ratio():
    s = KVScheduler(2048, schedule_conservativeness=0.5)
    assert (s.init_ratio, s.min_ratio) == pytest.approx((0.35, 0.35 * 0.14))
    assert KVScheduler(2048, schedule_conservativeness=2.0).init_ratio == 1.0
    with pytest.raises(ValueError):
        KVScheduler(2048, schedule_conservativeness=0)
    # Lower: more admitted beside running requests (new ones pay in full either way).
    admitted = []
    for c in (1.0, 0.3):
        s = KVScheduler(2048, schedule_conservativeness=c)
        _queued(s, *[(100, 400)] * 8)
        s.admit()
        s.admit()
        admitted.append(len(s.running))
    assert admitted == [5, 6]


def test_every_request_completes_exactly_and_the_pool_empties():
    async def go():
        server = KVServer(lambda body: body["sampling_params"]["max_new_tokens"], KVScheduler(1024))
        async with httpx.AsyncClient(transport=server, base_url="http://sim") as client:
            answers = await asyncio.gather(*(_one(client, i) for i in range(8)))
            metrics = parse_metrics((await client.get("/metrics")).text)
        await server.aclose()
        return answers, metrics, server

    (answers, metrics, server), _ = virtual_time.run(go())
    assert [a["meta_info"]["completion_tokens"] for a in answers] == [30] + [200] * 7
    assert sum(a["meta_info"]["num_retractions"] for a in answers) > 0
    assert metrics["token_usage"] == 0 and metrics["num_running_reqs"] == 0
    assert metrics["num_retracted_requests_total"] > 0
    assert max(r[1] for r in server.readings.samples) <= 1.0


async def _one(client: httpx.AsyncClient, i: int) -> dict:
    body = {
        "input_ids": [1000 + i * 50 + k for k in range(30)],
        "sampling_params": {"max_new_tokens": 30 if i == 0 else 200, "temperature": 0.0},
        "rid": f"one-{i}",
    }
    r = await client.post("/generate", json=body, timeout=600)
    r.raise_for_status()
    return r.json()


# ---- the same burst on the real CPU server ------------------------------------------------

POOL = 1024
PROMPT = 30
# Six requests sent as one batch (SGLang queues a pre-tokenized batch at once).
# min_new_tokens = max_new_tokens: known lengths, yet not ignore_eos (whose remaining tokens
# SGLang reserves in full, so it never retracts).
MAX_NEW = [200, 200, 200, 200, 200, 120]
# What SGLang's rules give: a new request pays prompt + max_new + 1 (231), so four fit in the
# first pass; the next pass charges those four as running (0.7 × 199 each) and admits a fifth;
# the sixth (151) waits. The five outgrow the pool before they end: the fifth, least advanced,
# is retracted. The old charge (prompt + 0.7 × max_new: 170) admitted six at once.
PEAK_RUNNING, RETRACTED = 5, {"burst-4"}


def _burst_body() -> dict:
    return {
        # distinct first tokens: no prefix of one prompt is cached for another
        "input_ids": [[2000 + 97 * i + k for k in range(PROMPT)] for i in range(len(MAX_NEW))],
        "sampling_params": [
            {"max_new_tokens": n, "min_new_tokens": n, "temperature": 0.0} for n in MAX_NEW
        ],
        "rid": [f"burst-{i}" for i in range(len(MAX_NEW))],
    }


def _run_burst(base_url: str, transport=None) -> tuple[list[dict], list[dict]]:
    """The burst against one server, its `/metrics` read until every answer is in."""
    samples: list[dict] = []

    async def go():
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            task = asyncio.create_task(client.post("/generate", json=_burst_body(), timeout=900))
            while not task.done():
                samples.append(parse_metrics((await client.get("/metrics")).text))
                await asyncio.sleep(0.05)
            samples.append(parse_metrics((await client.get("/metrics")).text))
            r = task.result()
            r.raise_for_status()
            return r.json()

    if transport is not None:
        answers, _ = virtual_time.run(go())
    else:
        answers = asyncio.run(go())
    return answers, samples


@pytest.fixture(scope="module")
def small_pool_server(tiny_kimi: Path):
    from draftgen.testing.sglang import SGLangServer, sglang_python

    if not sglang_python().exists():
        pytest.skip("the SGLang venv is missing: run `make sglang`")
    with SGLangServer(tiny_kimi, max_total_tokens=POOL) as server:
        yield server


def _retracted(answers: list[dict]) -> set[str]:
    return {f"burst-{i}" for i, a in enumerate(answers) if a["meta_info"].get("num_retractions", 0)}


@pytest.mark.sglang
@pytest.mark.long
def test_simulated_pool_behaves_like_the_real_servers(small_pool_server):
    info = httpx.get(f"{small_pool_server.url}/get_server_info", timeout=30).json()
    assert int(info["max_total_num_tokens"]) == POOL and int(info["page_size"]) == 1
    real, real_m = _run_burst(small_pool_server.url)
    sim_server = KVServer(
        lambda body: body["sampling_params"]["max_new_tokens"],
        KVScheduler(
            POOL,
            chunk=int(info["chunked_prefill_size"]),
            max_prefill=int(info["max_prefill_tokens"]),
            schedule_conservativeness=float(info["schedule_conservativeness"]),
        ),
        max_steps_per_wake=1,  # a reading after every step
    )
    sim, sim_m = _run_burst("http://sim", sim_server)

    # Same work: every request as long as asked, on both.
    for answers in (real, sim):
        assert [a["meta_info"]["completion_tokens"] for a in answers] == MAX_NEW
    # Five admitted, never more; the one that cannot fit waits while they run.
    for m in (real_m, sim_m):
        assert max(x.get("num_running_reqs", 0) for x in m) == PEAK_RUNNING, m
        assert any(x.get("num_running_reqs") == 5 and x.get("num_queue_reqs") == 1 for x in m)
        assert max(x.get("token_usage", 0) for x in m) <= 1.0
    # Pool accounting at matched points: whenever the real server showed a (running, queue)
    # state the simulation also passed through, its used tokens lie within the simulation's
    # range there (± two decode steps: SGLang's overlap scheduler runs one step ahead). A
    # reading below the running requests' prompts is SGLang's log of a batch that just ended
    # (its size, its KV already freed): not a state, skipped.
    spans: dict[tuple[int, int], list[int]] = {}
    for _, usage, running, queue, *_ in sim_server.readings.samples:
        spans.setdefault((running, queue), []).append(round(usage * POOL))
    matched = 0
    for x in real_m:
        key = (int(x.get("num_running_reqs", 0)), int(x.get("num_queue_reqs", 0)))
        used, slack = int(x.get("num_used_tokens", 0)), 2 * key[0]
        if key[0] and key in spans and used >= key[0] * PROMPT:
            assert min(spans[key]) - slack <= used <= max(spans[key]) + slack, (key, used)
            matched += 1
    assert matched >= 2, real_m
    # The forced overflow: the same request retracted on both, counted by the real server.
    assert _retracted(real) == _retracted(sim) == RETRACTED
    assert real_m[-1]["num_retracted_requests_total"] >= 1
