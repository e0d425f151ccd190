"""A server with data-parallel ranks (`--dp-size d`, or data-parallel attention) runs d
schedulers with a KV pool each, and a request lives in one of them: the generator reads every
rank's pool and load, weighs each rank as a pool of its own, and pins each request to the rank
it chose (`routed_dp_rank`). Plain numbers and the shapes a real `--dp-size 2` CPU server
answered with (tests/generator/test_dp_ranks_e2e.py runs one)."""

from __future__ import annotations

import numpy as np

from draftgen.contract.server_info import RankInfo, parse_server_info
from draftgen.generator.scheduling.demand import pool_view
from draftgen.generator.scheduling.room import (
    HORIZON,
    PEAK_SHARE,
    Ready,
    ServerView,
    kv_moments,
    next_launch,
    server_admits,
)
from draftgen.generator.sglang.client import (
    SGLangClient,
    load_from_metrics,
    parse_metrics,
    parse_rank_metrics,
)
from draftgen.generator.sglang.fleet import Pool, Server

# What SGLang 0.5.23 answered on the CPU with `--dp-size 2 --max-total-tokens 1024` (trimmed).
LABELS = 'engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"'
METRICS = "\n".join(
    f'sglang:{name}{{dp_rank="{rank}",{LABELS}}} {value}'
    for name, values in {
        "max_total_num_tokens": (1024.0, 1024.0),
        "num_running_reqs": (1.0, 0.0),
        "num_queue_reqs": (3.0, 0.0),
        "token_usage": (0.42, 0.0),
        "new_token_ratio": (0.5, 0.7),
    }.items()
    for rank, value in enumerate(values)
)
SERVER_INFO = {
    "max_total_num_tokens": 1024,  # rank 0's pool only
    "max_running_requests": None,
    "dp_size": 2,
    "max_req_input_len": 1018,
    "internal_states": [
        {
            "dp_rank": None,
            "effective_max_running_requests_per_dp": 512,
            "memory_usage": {"token_capacity": 1024, "weight": 0.05},
        },
        {
            "dp_rank": None,
            "effective_max_running_requests_per_dp": 512,
            "memory_usage": {"token_capacity": 1024, "weight": 0.05},
        },
    ],
}


def test_every_ranks_pool_is_read_not_only_rank_zeros():
    info = parse_server_info(SERVER_INFO)
    assert info.kv_tokens == 1024  # the top level: rank 0's pool
    assert info.ranks == (RankInfo(1024, 512), RankInfo(1024, 512))
    server = Server(SGLangClient("http://s:1"))
    server.size(info)
    assert [(p.rank, p.kv_tokens, p.max_running) for p in server.pools] == [
        (0, 1024, 512),
        (1, 1024, 512),
    ]
    assert server.kv_tokens == 2048
    # A server without data parallelism is one pool, and nothing is pinned.
    plain = Server(SGLangClient("http://s:2"))
    plain.size(
        parse_server_info({**SERVER_INFO, "internal_states": SERVER_INFO["internal_states"][:1]})
    )
    assert [(p.rank, p.kv_tokens, p.routed_rank) for p in plain.pools] == [(None, 1024, None)]


def test_each_rank_takes_its_own_gauges_from_the_metrics_page():
    # The page's largest value over ranks (what one pool per server read) hides which is full.
    assert parse_metrics(METRICS)["num_queue_reqs"] == 3.0
    ranks = parse_rank_metrics(METRICS)
    assert ranks[0]["num_queue_reqs"] == 3.0 and ranks[1]["num_queue_reqs"] == 0.0
    server = Server(SGLangClient("http://s:1"))
    server.size(parse_server_info(SERVER_INFO))
    server.take_load(load_from_metrics(parse_metrics(METRICS), 1.0, ranks))
    rank0, rank1 = server.pools
    assert (rank0.load.token_usage, rank0.load.num_queue_reqs) == (0.42, 3.0)
    assert (rank1.load.token_usage, rank1.load.num_queue_reqs) == (0.0, 0.0)
    assert rank0.load.new_token_ratio == 0.5 and rank1.load.new_token_ratio == 0.7
    assert [p.routed_rank for p in server.pools] == [0, 1]
    # A lost reading clears every rank's.
    server.take_load(None)
    assert rank0.load is None and rank1.load is None


def test_a_server_back_with_other_ranks_gets_new_pools_and_old_ones_pin_nothing():
    server = Server(SGLangClient("http://s:1"))
    server.size(parse_server_info(SERVER_INFO))
    old = server.pools[1]
    server.size(parse_server_info(SERVER_INFO))
    assert server.pools[1] is old  # same ranks: the pools (and what is in flight) are kept
    server.size(
        parse_server_info({**SERVER_INFO, "internal_states": SERVER_INFO["internal_states"] * 2})
    )
    assert len(server.pools) == 4 and old.routed_rank is None


# ---- routing: the expected-peak rule per rank --------------------------------------------------

KV = 1024
LONG, SHORT, MAX_NEW = 350, 10, 200  # two long requests (1,100 KV tokens) overflow one pool


def _alive(max_new: int) -> np.ndarray:
    """A dataset whose lengths are not known yet: every request runs to maxNewTokens."""
    return (max_new > HORIZON).astype(float)


def _view(prompts: list[int]) -> ServerView:
    held = np.array(prompts, dtype=float)
    alive = np.tile(_alive(MAX_NEW), (len(prompts), 1))
    mean, var, most = kv_moments(held, alive)
    return ServerView(
        kv_tokens=KV,
        max_running=None,
        in_flight=len(prompts),
        in_flight_tokens=float(sum(p + MAX_NEW for p in prompts)),
        kv_mean=mean.sum(axis=0),
        kv_var=var.sum(axis=0),
        kv_most=most.sum(axis=0),
    )


def _ready(prompt: int) -> Ready:
    return Ready(prompt, MAX_NEW, prompt + MAX_NEW, 0, 0, _alive(MAX_NEW))


def test_long_and_short_requests_alternating_go_one_long_per_rank():
    """SGLang's round-robin dispatch sends every other request to the same rank: long, short,
    long, short puts both long ones in rank 0's pool (1,100 tokens at their peak in a 1,024
    pool) while rank 1 holds the short ones. Routed per rank, the second long one goes to the
    rank with room, and a third waits instead of overflowing either."""
    assert 2 * (LONG + MAX_NEW) > PEAK_SHARE * KV  # two long ones overflow a rank
    pools: list[list[int]] = [[], []]
    placed = []
    for prompt in (LONG, SHORT, LONG, SHORT, LONG):
        launch = next_launch(
            [_ready(prompt)],
            [_view(p) for p in pools],
            mode="auto",
            max_requests=None,
            tokens_factor=10.0,
        )
        placed.append(None if launch is None else launch.server)
        if launch is not None:
            pools[launch.server].append(prompt)
    assert sorted(pools[0] + pools[1]) == [SHORT, SHORT, LONG, LONG]
    assert pools[0].count(LONG) == 1 and pools[1].count(LONG) == 1
    assert placed[-1] is None  # the third long one: no rank has room for it yet


def test_max_requests_caps_the_whole_server_not_each_rank():
    """`maxRequests` means per server: its ranks share it (the least loaded rank takes each)."""
    kw = dict(mode="fixed", max_requests=4, tokens_factor=10.0)
    rank = ServerView(KV, None, 2, 0.0, replica_in_flight=4)
    assert not server_admits(rank, 1.0, **kw)  # type: ignore[arg-type]
    assert server_admits(ServerView(KV, None, 2, 0.0, replica_in_flight=3), 1.0, **kw)  # type: ignore[arg-type]
    server = Server(SGLangClient("http://s:1"))
    server.size(parse_server_info(SERVER_INFO))
    server.pools[0].in_flight = 3
    assert [pool_view(p, 0.0).replica_in_flight for p in server.pools] == [3, 3]
    assert pool_view(Pool(Server(SGLangClient("http://s:2"))), 0.0).replica_in_flight is None


def test_the_test_server_starts_data_parallel_ranks_with_a_core_each(tmp_path):
    from draftgen.testing.sglang import SGLangServer

    server = SGLangServer(tmp_path, port=1, max_total_tokens=1024, dp_size=2)
    command = server.command()
    assert command[command.index("--dp-size") + 1] == "2"
    assert server.environment()["SGLANG_CPU_OMP_THREADS_BIND"].count("|") == 1
    assert "--dp-size" not in SGLangServer(tmp_path, port=1).command()


def test_the_operator_shows_the_servers_tokens_over_every_rank():
    """`status.server.maxTotalNumTokens` (and status.plan from it): both ranks' pools, not the
    top level's rank 0."""
    assert parse_server_info(SERVER_INFO).total_kv_tokens == 2048
    one = {**SERVER_INFO, "internal_states": SERVER_INFO["internal_states"][:1]}
    assert parse_server_info(one).total_kv_tokens == 1024
