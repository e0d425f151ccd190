"""The simulated server with d data-parallel ranks (`bench/dp_kv_server.py`) dispatches as SGLang
0.5.23's `DataParallelController` does (round robin, total_requests, total_tokens, a pinned
`routed_dp_rank` first) and reports what a real `--dp-size` server reports: rank 0's pool at the
top of `/get_server_info`, one `internal_states` entry and `dp_rank`-labelled gauges per rank.
Counts and tokens only, no timing."""

from __future__ import annotations

import asyncio

import httpx

from draftgen.contract.server_info import parse_server_info
from draftgen.generator.sglang.client import parse_rank_metrics

from .test_kv_server import _bench_module, virtual_time

dp_kv_server = _bench_module("dp_kv_server")
KVScheduler = _bench_module("kv_scheduler").KVScheduler

LONG, SHORT = 500, 20


def _send(
    method: str, bodies: list[dict], *, honour_routing: bool = True, burst: bool = False
) -> list[list[int]]:
    """Send `bodies` one after another (each answered, after its one token, before the next), or
    all at once (`burst`, in order); the prompt tokens each rank got."""
    ranks = [KVScheduler(4096), KVScheduler(4096)]
    server = dp_kv_server.DPKVServer(
        lambda body: 1, ranks, method=method, honour_routing=honour_routing
    )

    async def go() -> None:
        async with httpx.AsyncClient(transport=server, base_url="http://sim") as client:
            posts = [
                client.post(
                    "/generate",
                    json={"rid": f"r{i}", "sampling_params": {"max_new_tokens": 1}, **body},
                )
                for i, body in enumerate(bodies)
            ]
            if burst:
                await asyncio.gather(*posts)
            else:
                for post in posts:
                    await post
        await server.aclose()

    virtual_time.run(go())
    return [[rank.prompt_tokens] for rank in ranks]


def _alternating(n: int) -> list[dict]:
    return [{"input_ids": [1] * (LONG if i % 2 == 0 else SHORT)} for i in range(n)]


def test_round_robin_puts_every_other_request_on_the_same_rank():
    assert _send("round_robin", _alternating(4)) == [[2 * LONG], [2 * SHORT]]


def test_a_pinned_request_goes_to_its_rank_unless_the_client_is_not_honoured():
    pinned = [
        {**b, "routed_dp_rank": i % 2 if i < 2 else 1 - i % 2}
        for i, b in enumerate(_alternating(4))
    ]
    assert _send("round_robin", pinned) == [[LONG + SHORT], [LONG + SHORT]]
    assert _send("round_robin", pinned, honour_routing=False) == [[2 * LONG], [2 * SHORT]]


def test_total_tokens_balances_a_bursts_prompt_tokens_and_total_requests_its_count():
    # A burst: each dispatch adds its guess to the chosen rank until the next refresh.
    assert _send("total_tokens", _alternating(4), burst=True) == [[LONG + SHORT], [LONG + SHORT]]
    assert _send("total_requests", _alternating(4), burst=True) == [[2 * LONG], [2 * SHORT]]
    assert _send("round_robin", _alternating(4), burst=True) == [[2 * LONG], [2 * SHORT]]
    # Idle between requests, both ranks weigh nothing: the first rank takes each (ties).
    assert _send("total_tokens", _alternating(4)) == [[2 * LONG + 2 * SHORT], [0]]


def test_it_reports_each_ranks_pool_and_gauges_like_a_real_dp_server():
    ranks = [KVScheduler(1000), KVScheduler(2000)]
    server = dp_kv_server.DPKVServer(lambda body: 1, ranks)

    async def go():
        async with httpx.AsyncClient(transport=server, base_url="http://sim") as client:
            info = (await client.get("/get_server_info")).json()
            page = (await client.get("/metrics")).text
        await server.aclose()
        return info, page

    info, page = asyncio.run(go())
    parsed = parse_server_info(info)
    assert parsed.kv_tokens == 1000  # rank 0's only, as SGLang's top level
    assert [r.kv_tokens for r in parsed.ranks] == [1000, 2000]
    assert {r: v["max_total_num_tokens"] for r, v in parse_rank_metrics(page).items()} == {
        0: 1000,
        1: 2000,
    }
