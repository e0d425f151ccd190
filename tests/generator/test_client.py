"""The SGLang client: request shape, typed errors, abort, metrics — against the real server where
one can answer, and against a closed port for connection errors."""

from __future__ import annotations

import asyncio
import socket

import pytest

from draftgen.generator.sglang.client import (
    Aborted,
    BadResponse,
    ServerUnavailable,
    SGLangClient,
    parse_generation,
    parse_metrics,
    sampling_params,
)
from draftgen.spec import SamplingSpec


def test_sampling_params_are_always_explicit():
    p = sampling_params(SamplingSpec(), "ds/x/0")
    assert p["max_new_tokens"] == 16384  # never SGLang's silent default of 128
    assert p["skip_special_tokens"] is False and p["no_stop_trim"] is True
    assert {"temperature", "top_p", "top_k", "min_p"} <= p.keys()
    assert "sampling_seed" not in p
    seeded = SamplingSpec(seed=5, stop_token_ids=[163586])
    a, b = sampling_params(seeded, "ds/x/0"), sampling_params(seeded, "ds/y/0")
    assert a["sampling_seed"] == sampling_params(seeded, "ds/x/0")["sampling_seed"]
    assert a["sampling_seed"] != b["sampling_seed"]
    assert a["stop_token_ids"] == [163586]


def test_generation_parsing_keeps_ids_and_refuses_aborts():
    g = parse_generation(
        {
            "output_ids": [163606, 5, 163607],
            "meta_info": {
                "finish_reason": {"type": "stop", "matched": 163586},
                "prompt_tokens": 3,
                "cached_tokens": 1,
                "e2e_latency": 0.5,
                "unknown_key": 1,
            },
        }
    )
    assert g.output_ids == [163606, 5, 163607] and g.matched_stop == 163586
    with pytest.raises(Aborted):
        parse_generation({"output_ids": [1], "meta_info": {"finish_reason": {"type": "abort"}}})
    with pytest.raises(BadResponse):
        parse_generation({"text": "no ids"})


def test_metrics_keep_the_binding_value_over_label_sets():
    text = (
        "# HELP sglang:token_usage x\n"
        'sglang:token_usage{tp_rank="0"} 0.25\nsglang:token_usage{tp_rank="1"} 0.75\n'
        'sglang:num_queue_reqs{tp_rank="0"} 3.0\nother_metric 9\n'
    )
    assert parse_metrics(text) == {"token_usage": 0.75, "num_queue_reqs": 3.0}


def test_a_closed_port_is_server_unavailable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def go():
        async with SGLangClient(f"http://127.0.0.1:{port}") as c:
            with pytest.raises(ServerUnavailable) as err:
                await c.generate([1, 2], {"max_new_tokens": 1}, "r")
            assert err.value.retryable and err.value.kind == "connect"
            assert not await c.healthy()
            with pytest.raises(ServerUnavailable, match="health_generate"):
                await c.wait_healthy(timeout=0.2, interval=0.1)

    asyncio.run(go())


@pytest.mark.sglang
def test_real_server_generate_info_metrics_and_refusals(sglang_server):
    async def go():
        async with SGLangClient(sglang_server.url, timeout=120) as c:
            info = await c.server_info()
            assert info["max_total_num_tokens"] > 0 and info["max_req_input_len"] > 0
            assert (await c.model_info())["model_path"].endswith("tiny-kimi")
            load = await c.metrics()
            assert load.max_total_num_tokens == info["max_total_num_tokens"]
            g = await c.generate(
                [163587, 300, 301, 163601, 163606],
                {"max_new_tokens": 5, "temperature": 0.0},
                "client-test-1",
            )
            assert 1 <= len(g.output_ids) <= 5 and g.finish_reason in ("stop", "length")
            with pytest.raises(BadResponse) as err:
                await c.generate([300] * 10, {"max_new_tokens": -2}, "client-test-2")
            assert not err.value.retryable and not err.value.prompt_too_long
            with pytest.raises(BadResponse) as err:
                await c.generate(
                    [300] * (info["max_req_input_len"] + 10), {"max_new_tokens": 2}, "client-test-3"
                )
            assert err.value.prompt_too_long

    asyncio.run(go())


@pytest.mark.sglang
def test_abort_ends_a_running_generation_without_a_result(sglang_server):
    async def go():
        async with SGLangClient(sglang_server.url, timeout=300) as c:
            task = asyncio.create_task(
                c.generate(
                    [163587, 300, 301, 163601, 163606],
                    {"max_new_tokens": 3000, "temperature": 1.0, "ignore_eos": True},
                    "client-abort",
                )
            )
            # Abort until it lands: an abort that reaches the server before the request does
            # finds nothing to end (no head start to count on on a busy machine).
            while not task.done():
                await c.abort("client-abort")
                await asyncio.wait({task}, timeout=0.5)
            with pytest.raises(Aborted):
                await task

    asyncio.run(go())
