"""The one reading of SGLang's `/get_server_info`, shared by the generator (admission sizing) and
the operator (`status.server.maxTotalNumTokens`)."""

from __future__ import annotations

import pytest

from draftgen.contract.server_info import ServerInfo, ServerInfoError, parse_server_info

# The fields draftgen reads, as this repository's SGLang reports them (top level: server args and
# scheduler info; `internal_states`: one entry per data-parallel rank).
REAL_SHAPE = {
    "max_total_num_tokens": 116171,
    "max_running_requests": None,
    "max_req_input_len": 4090,
    "skip_tokenizer_init": False,
    "context_length": 4096,
    "version": "x",
    "internal_states": [{"effective_max_running_requests_per_dp": 2048, "memory_usage": {}}],
}


def test_the_real_shape():
    assert parse_server_info(REAL_SHAPE) == ServerInfo(
        kv_tokens=116171,
        max_running_requests=2048,
        max_prompt_tokens=4089,  # SGLang refuses a prompt of max_req_input_len tokens
        skip_tokenizer_init=False,
        context_length=4096,
    )


def test_the_kv_pool_reported_only_per_rank_is_taken_from_the_first_rank_that_has_it():
    info = parse_server_info(
        {
            "internal_states": [
                "odd",
                {},
                {"max_total_num_tokens": 5000},
                {"max_total_num_tokens": 7},
            ]
        }
    )
    assert info.kv_tokens == 5000
    assert (
        parse_server_info(
            {"max_total_num_tokens": 0, "internal_states": [{"max_total_num_tokens": 9}]}
        ).kv_tokens
        == 9
    )


def test_the_top_level_running_limit_is_the_fallback():
    info = parse_server_info({"max_running_requests": 64, "internal_states": []})
    assert info.max_running_requests == 64


@pytest.mark.parametrize("value", [None, 0, -3, "1000", True, float("nan"), float("inf"), [1]])
def test_no_usable_number_is_none(value):
    info = parse_server_info(
        {
            "max_total_num_tokens": value,
            "max_req_input_len": value,
            "max_running_requests": value,
            "internal_states": value,
        }
    )
    assert info == ServerInfo(None, None, None, False)


def test_floats_become_ints():
    assert parse_server_info({"max_total_num_tokens": 1000.0}).kv_tokens == 1000


@pytest.mark.parametrize("body", [[], "text", None, 3])
def test_an_answer_that_is_not_an_object_is_a_typed_error(body):
    with pytest.raises(ServerInfoError):
        parse_server_info(body)
    assert issubclass(ServerInfoError, ValueError)  # the operator's fetch treats it as "unknown"
