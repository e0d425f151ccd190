"""Classes 4 and 10 of issue 21, where only the server knows the limits: a `maxNewTokens` that
leaves no room for a prompt in the server's context is refused at start-up before any request
(exit 3, the limit and the fix), and the prompt limit passed to the inputs is one below SGLang's
`max_req_input_len` (SGLang refuses a prompt of exactly that length)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from draftgen.contract.server_info import model_len, parse_server_info
from draftgen.generator.prompts.integrity import IntegrityError
from draftgen.generator.prompts.samples import Sample
from draftgen.generator.run import Runner, Settings
from draftgen.spec import parse_job
from tests.jobs import job_document

SERVER_INFO = {
    "max_total_num_tokens": 8192,
    "max_running_requests": 4,
    "max_req_input_len": 4000,
    "context_length": None,  # SGLang 0.5.23 reports the launch argument: null without one
    "skip_tokenizer_init": True,
}
MODELS = {"object": "list", "data": [{"id": "m", "object": "model", "max_model_len": 4096}]}


class FakeServer:
    """SGLang's start-up endpoints and a `/generate` that answers one token and counts calls."""

    def __init__(self) -> None:
        self.generate_calls = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/health_generate":
            return httpx.Response(200, text="ok")
        if path == "/get_server_info":
            return httpx.Response(200, json=SERVER_INFO)
        if path == "/v1/models":
            return httpx.Response(200, json=MODELS)
        if path == "/generate":
            self.generate_calls += 1
            body = json.loads(request.content)
            n = len(body["input_ids"])
            meta = {
                "finish_reason": {"type": "length", "length": 1},
                "prompt_tokens": n,
                "completion_tokens": 1,
            }
            return httpx.Response(200, json={"output_ids": [7], "meta_info": meta})
        return httpx.Response(404, text="not here")


def _run(tmp_path: Path, server: FakeServer, seen: list, **spec: object) -> Runner:
    job = parse_job(
        job_document(
            "ctx",
            model={"weights": "/nonexistent/model"},
            datasets=[{"name": "d", "source": "unused.jsonl", "format": "prompt"}],
            **spec,
        )
    )

    def source(dataset, skip, max_prompt):
        seen.append(max_prompt)
        if "d/row0/0" not in skip:
            yield Sample("d/row0/0", "d", 0, 0, [11, 12, 13])

    runner = Runner(
        job,
        Settings(
            servers=["http://fake:30000"],
            output=tmp_path / "out",
            live_progress=False,
            health_timeout=5,
            manifest_interval=0.2,
            transport=httpx.MockTransport(server),
        ),
        source,
    )
    asyncio.run(asyncio.wait_for(runner.run(), 60))
    return runner


def test_max_new_tokens_beyond_the_servers_context_is_refused_before_any_request(tmp_path):
    server = FakeServer()
    with pytest.raises(IntegrityError) as err:
        _run(tmp_path, server, [], sampling={"maxNewTokens": 4096})
    message = str(err.value)
    assert "context length is 4096 tokens" in message
    assert "spec.datasets[0](d).sampling.maxNewTokens 4096" in message
    assert "lower maxNewTokens below 4096" in message
    assert server.generate_calls == 0


def test_the_prompt_limit_is_one_below_max_req_input_len(tmp_path):
    server = FakeServer()
    seen: list = []
    _run(tmp_path, server, seen, sampling={"maxNewTokens": 4095})
    assert seen == [3999] and server.generate_calls == 1
    assert parse_server_info({"max_req_input_len": 4000}).max_prompt_tokens == 3999
    assert parse_server_info({"max_req_input_len": 1}).max_prompt_tokens is None


def test_the_context_is_read_from_server_info_first_then_v1_models():
    assert parse_server_info({"context_length": 8192}).context_length == 8192
    assert parse_server_info({"context_length": None}).context_length is None
    assert model_len(MODELS) == 4096
    assert model_len({"data": []}) is None and model_len(["odd"]) is None
