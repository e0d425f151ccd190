"""Per-rank admission against a real `--dp-size 2` CPU SGLang server: two schedulers, a
1,024-token KV pool each. The work alternates long requests (350-token prompts, 200 new tokens:
two of them overflow one pool) and short ones.

SGLang's own dispatch (round-robin) sends every other request to the same rank: all the long
ones land in one rank's pool, which queues them while the other rank, holding only short ones,
runs dry. draftgen reads both ranks' pools and loads and pins each request to the rank with room
(`routed_dp_rank`): each rank runs long ones, and nothing is prefilled twice (no retraction).

What each rank did is read from the server itself: its `dp_rank`-labelled `/metrics` (tokens
prefilled per rank, a counter; queue and running requests per rank while it works)."""

from __future__ import annotations

import re
import threading

import httpx
import pytest

from tests.conftest import DP_GROUP, DP_POOL

from .gen_helpers import THINK, records, run_inprocess, write_job, write_jsonl

pytestmark = [pytest.mark.sglang, DP_GROUP]

POOL = DP_POOL
LONG, SHORT, MAX_NEW, PAIRS = 350, 10, 200, 4
SLACK = 32
"""Prefill tokens per rank beyond the requests': a `/health_generate` probe's few."""


def prompts() -> list[list[int]]:
    """Long, short, long, short...: distinct prompts (no shared prefix for the radix cache)."""
    out = []
    for k in range(PAIRS):
        out.append([3000 + 50 * k + (i * 7) % 900 for i in range(LONG - 1)] + [THINK])
        out.append([20000 + 50 * k + i for i in range(SHORT - 1)] + [THINK])
    return out


def rank_gauges(url: str) -> dict[str, dict[int, float]]:
    """Per rank: tokens prefilled (every mode: a retracted request's second prefill counts
    whether or not it hits the cache), requests queued, requests running."""
    out: dict[str, dict[int, float]] = {"prefilled": {}, "queued": {}, "running": {}}
    names = {
        "prefill_effective_tokens_total": "prefilled",
        "num_queue_reqs": "queued",
        "num_running_reqs": "running",
    }
    for line in httpx.get(url + "/metrics", timeout=30).text.splitlines():
        m = re.match(r'sglang:(\w+)\{.*dp_rank="(\d+)".*\} (\S+)$', line)
        if m and m.group(1) in names:
            by_rank = out[names[m.group(1)]]
            rank = int(m.group(2))
            by_rank[rank] = by_rank.get(rank, 0.0) + float(m.group(3))
    return out


class Watch:
    """Reads the per-rank gauges every 0.2 s while the work runs."""

    def __init__(self, url: str) -> None:
        self.url, self.seen, self._stop = url, [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.seen.append(rank_gauges(self.url))
            self._stop.wait(0.2)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def one_queues_while_the_other_is_idle(self) -> bool:
        return any(
            g["queued"].get(a, 0) >= 1 and g["queued"].get(b, 0) == 0 and g["running"].get(b) == 0
            for g in self.seen
            for a, b in ((0, 1), (1, 0))
        )


def prefilled_since(url: str, before: dict[str, dict[int, float]]) -> dict[int, float]:
    after = rank_gauges(url)["prefilled"]
    return {r: after[r] - before["prefilled"].get(r, 0.0) for r in (0, 1)}


@pytest.mark.timeout(900)
def test_sglang_round_robin_puts_every_long_request_in_one_ranks_pool(dp_server) -> None:
    """The case draftgen must not leave to the server: in order, long and short alternate
    between the ranks, so one pool gets 4 × 550 tokens of work and the other 4 × 210."""
    url = dp_server.url
    before = rank_gauges(url)
    with Watch(url) as watch:
        answers = httpx.post(
            url + "/generate",
            json={
                "input_ids": prompts(),  # one batch: dispatched in this order
                "sampling_params": {"max_new_tokens": MAX_NEW, "temperature": 0.0},
            },
            timeout=800,
        ).json()
    assert len(answers) == 2 * PAIRS
    prefilled = prefilled_since(url, before)
    full, light = sorted((0, 1), key=lambda r: -prefilled[r])
    assert prefilled[full] >= PAIRS * LONG  # every long prompt went to one rank
    assert prefilled[light] <= PAIRS * SHORT + SLACK  # the other got only the short ones
    assert watch.one_queues_while_the_other_is_idle()


@pytest.mark.timeout(900)
def test_draftgen_routes_each_request_to_the_rank_with_room(tmp_path, tiny_kimi, dp_server):
    url = dp_server.url
    write_jsonl(tmp_path / "mixed.jsonl", [{"input_ids": p} for p in prompts()])
    job = write_job(
        tmp_path,
        tiny_kimi,
        [{"name": "mixed", "source": "mixed.jsonl", "format": "pretokenized"}],
        sampling={"maxNewTokens": MAX_NEW, "temperature": 0.0},
    )
    before = rank_gauges(url)
    runner = run_inprocess(job, url, tmp_path / "out")
    # Both ranks' pools, not rank 0's alone as the server's (what /server_info's top level says).
    assert [(p.rank, p.kv_tokens) for p in runner.pools] == [(0, POOL), (1, POOL)]
    done = records(tmp_path / "out" / "mixed")
    assert len(done) == 2 * PAIRS
    on = {r: [d for d in done if d["meta"]["dp_rank"] == r] for r in (0, 1)}
    # Each rank ran long requests: the second went to the rank with room, not behind the first.
    assert all(any(d["prompt_tokens"] == LONG for d in on[r]) for r in (0, 1))
    # Each rank prefilled exactly the prompts pinned to it, once: routed as recorded, and
    # nothing retracted (a retracted request is prefilled again).
    prefilled = prefilled_since(url, before)
    for r in (0, 1):
        mine = sum(d["prompt_tokens"] for d in on[r])
        assert mine <= prefilled[r] <= mine + SLACK, (r, mine, prefilled[r])


def test_the_operator_reads_every_ranks_pool_into_the_jobs_status(dp_server) -> None:
    """`status.server.maxTotalNumTokens` is both pools together and `kvTokensPerRank` each one,
    read the way the operator reads a server pod (SGLang's top level says rank 0's alone)."""
    from urllib.parse import urlparse

    from draftgen.controller.readings import server_kv_pools

    url = urlparse(dp_server.url)
    top_level = httpx.get(dp_server.url + "/get_server_info", timeout=30).json()
    assert top_level["max_total_num_tokens"] == POOL  # rank 0's only
    assert server_kv_pools(url.hostname, url.port, timeout=30) == (2 * POOL, [POOL, POOL])
