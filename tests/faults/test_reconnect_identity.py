"""Class 1 of issue 21: a server that comes back behind the same URL serving another model is
refused; the run stops (exit 3) instead of mixing the two models' samples. Unit level against a
scripted server, and end to end: the real server SIGKILLed and another model started on its
port while `draftgen generate` waits for it."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from draftgen.contract.generator_cli import ExitCode
from draftgen.generator.prompts.integrity import IntegrityError
from draftgen.generator.sglang.fleet import Fleet
from draftgen.generator.telemetry.metrics import GeneratorMetrics
from draftgen.testing.sglang import SGLangServer, free_port
from tests.conftest import SGLANG_VENV, TINY_KIMI
from tests.gate import Gate

from .gen_run import Run, generate_args, prompt_rows, record_count, records, write_job, write_jsonl

TINY_CHATML = TINY_KIMI.parent / "tiny-chatml"


def _scripted(state: dict) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/health_generate":
            return httpx.Response(200, text="ok")
        if request.url.path == "/get_server_info":
            return httpx.Response(
                200,
                json={
                    "model_path": state["model"],
                    "tokenizer_path": state["model"],
                    "max_total_num_tokens": 4096,
                    "max_req_input_len": 4000,
                },
            )
        return httpx.Response(404)

    return httpx.MockTransport(handle)


def _fleet(state: dict, fatal: list) -> Fleet:
    return Fleet(
        ["http://server"],
        request_timeout=5,
        transport=_scripted(state),
        health_timeout=5,
        metrics_interval=1,
        tokenizer=None,
        special_tokens=[],
        metrics=GeneratorMetrics(),
        wake=lambda: None,
        on_fatal=fatal.append,
    )


@pytest.mark.parametrize("same", [True, False])
def test_identity_is_checked_again_after_a_reconnection(same):
    state = {"model": "/models/a"}
    fatal: list[BaseException] = []

    async def scenario() -> Fleet:
        fleet = _fleet(state, fatal)
        await fleet.check()
        [server] = fleet.servers
        if not same:
            state["model"] = "/models/b"  # restarted with another model
        fleet.server_failed(server)
        await fleet.recovered(server)
        await fleet.aclose()
        return fleet

    fleet = asyncio.run(scenario())
    if same:
        assert not fatal and fleet.servers[0].healthy
    else:
        assert len(fatal) == 1 and isinstance(fatal[0], IntegrityError)
        assert "model_path '/models/a' -> '/models/b'" in str(fatal[0])
        assert not fleet.servers[0].healthy


@pytest.mark.sglang
@pytest.mark.long
def test_a_server_restarted_with_another_model_stops_the_run(tmp_path, tiny_kimi):
    if not (SGLANG_VENV / "bin" / "python").exists() or not (TINY_CHATML / "config.json").exists():
        pytest.skip("needs the SGLang venv and the tiny-chatml model (make setup)")
    write_jsonl(tmp_path / "p.jsonl", prompt_rows(60))
    job = write_job(
        tmp_path,
        tiny_kimi,
        [{"name": "chat", "source": "p.jsonl", "format": "prompt"}],
        sampling={"temperature": 0.0, "maxNewTokens": 24},
        generator={"concurrency": {"mode": "fixed", "maxRequests": 2}},
    )
    out = tmp_path / "out"
    port = free_port()
    # Requests after the first four wait at a gate (in front of the port): the run is mid-way
    # when the server goes, however fast it would otherwise finish.
    with (
        SGLangServer(tiny_kimi, port=port, max_total_tokens=4096) as first,
        Gate(first.url, let_through=4) as gate,
    ):
        run = Run(generate_args(job, gate.url, out), tmp_path)
        deadline = time.monotonic() + 120
        while record_count(out) < 2:
            assert run.poll() is None, run.log()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        gate.wait_held()
        first.kill()
        gate.open()
        before = len(records(out / "chat"))
        with SGLangServer(TINY_CHATML, port=port, max_total_tokens=4096):
            code, log = run.finish(timeout=300)
    assert code == ExitCode.INTEGRITY, log
    assert "came back serving another model" in log or "different model" in log
    assert "Traceback" not in log
    recs = records(out / "chat")
    assert len(recs) == before  # nothing of the other model landed
    assert all(json.dumps(r).count("tiny-chatml") == 0 for r in recs)
