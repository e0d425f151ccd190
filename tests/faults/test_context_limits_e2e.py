"""Classes 4 and 10 of issue 21 against the real SGLang server: its own `context_length` refuses
a too-large `maxNewTokens` at start-up, and a prompt of exactly its `max_req_input_len` (which it
would refuse) becomes a `prompt_too_long` reject while one token less is generated."""

from __future__ import annotations

import json

import httpx
import pytest

from draftgen.generator.prompts.integrity import IntegrityError
from tests.generator.gen_helpers import records, run_inprocess, write_job, write_jsonl

pytestmark = pytest.mark.sglang


def test_max_new_tokens_over_the_real_context_is_refused_before_any_record(
    tmp_path, tiny_kimi, sglang_server
):
    # SGLang 0.5.23's /get_server_info has context_length null (no --context-length given).
    assert (
        httpx.get(f"{sglang_server.url}/get_server_info", timeout=30).json()["context_length"]
        is None
    )
    models = httpx.get(f"{sglang_server.url}/v1/models", timeout=30).json()
    context = models["data"][0]["max_model_len"]
    write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "prompt": "hello"}])
    job = write_job(
        tmp_path,
        tiny_kimi,
        [{"name": "p", "source": "p.jsonl", "format": "prompt"}],
        sampling={"maxNewTokens": context},
    )
    with pytest.raises(IntegrityError) as err:
        run_inprocess(job, sglang_server.url, tmp_path / "out")
    assert f"context length is {context} tokens" in str(err.value)
    assert f"maxNewTokens {context}" in str(err.value)
    assert records(tmp_path / "out" / "p") == []


def test_a_prompt_of_exactly_max_req_input_len_is_a_reject_not_a_request(
    tmp_path, tiny_kimi, sglang_server
):
    limit = httpx.get(f"{sglang_server.url}/get_server_info", timeout=30).json()[
        "max_req_input_len"
    ]
    rows = [
        {"id": "at", "input_ids": [17] * limit},
        {"id": "below", "input_ids": [17] * (limit - 1)},
    ]
    write_jsonl(tmp_path / "t.jsonl", rows)
    job = write_job(
        tmp_path,
        tiny_kimi,
        [{"name": "t", "source": "t.jsonl", "format": "pretokenized"}],
        sampling={"maxNewTokens": 2},
    )
    run_inprocess(job, sglang_server.url, tmp_path / "out")
    done = records(tmp_path / "out" / "t")
    assert [r["prompt_tokens"] for r in done] == [limit - 1]
    rejects = [
        json.loads(x) for x in (tmp_path / "out" / "t" / "rejects.jsonl").read_text().splitlines()
    ]
    assert [r["reason"] for r in rejects] == ["prompt_too_long"], rejects
