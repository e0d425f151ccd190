"""The generator against a real SGLang server (tiny-kimi on the CPU, a 4,096-token KV pool):
verbatim output ids, the prompt format, budgets, rejects, integrity, metrics."""

from __future__ import annotations

import json

import pytest

from .gen_helpers import (
    THINK,
    WEATHER_TOOL,
    cli,
    direct_generate,
    generate_command,
    records,
    rejects,
    run_inprocess,
    write_job,
    write_jsonl,
    write_prompt_job,
)

pytestmark = pytest.mark.sglang


@pytest.fixture(scope="module")
def greedy_run(tmp_path_factory, tiny_kimi, sglang_server):
    """One greedy run over a dataset with tools and a file of bad rows."""
    d = tmp_path_factory.mktemp("greedy")
    write_jsonl(
        d / "tools.jsonl",
        [
            {
                "id": "w1",
                "tools": [WEATHER_TOOL],
                "messages": [{"role": "user", "content": "What is the weather in Lagos?"}],
            },
            {
                "id": "w2",
                "tools": [WEATHER_TOOL],
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "And in Oslo?"},
                ],
            },
        ],
    )
    write_jsonl(
        d / "bad.jsonl",
        [
            '{"id": "broken", "messages": [',
            {"id": "nofield"},
            {"id": "empty", "messages": []},
            {"id": "long", "messages": [{"role": "user", "content": "lorem ipsum dolor " * 3000}]},
            {"id": "fine", "messages": [{"role": "user", "content": "Hello there."}]},
        ],
    )
    job = write_job(
        d,
        tiny_kimi,
        [
            {"name": "tools", "source": "tools.jsonl", "format": "messages"},
            {"name": "bad", "source": "bad.jsonl", "format": "messages"},
        ],
    )
    runner = run_inprocess(job, sglang_server.url, d / "out")
    return d / "out", runner


def test_output_ids_are_exactly_what_generate_returns(greedy_run, sglang_server):
    out, _ = greedy_run
    recs = records(out / "tools")
    assert len(recs) == 2
    for rec in recs:
        direct = direct_generate(sglang_server.url, rec["input_ids"], 12)
        assert rec["output_ids"] == direct["output_ids"]
        assert rec["completion_tokens"] == len(rec["output_ids"])
        assert rec["prompt_tokens"] == len(rec["input_ids"])
        assert rec["finish_reason"] in ("stop", "length")
        assert rec["meta"]["sampling"]["max_new_tokens"] == 12
        assert rec["meta"]["sampling"]["skip_special_tokens"] is False


def test_prompt_carries_the_think_prefix_and_the_tool_declaration(greedy_run, tiny_kimi):
    from transformers import AutoTokenizer

    out, _ = greedy_run
    tok = AutoTokenizer.from_pretrained(str(tiny_kimi))
    for rec in records(out / "tools"):
        assert rec["input_ids"][-1] == THINK
        text = tok.decode(rec["input_ids"])
        assert "tool_declare" in text and "get_weather" in text
        assert any(i > 65_535 for i in rec["input_ids"])  # Kimi's special ids, as plain ints


def test_bad_rows_become_rejects_and_the_job_goes_on(greedy_run):
    out, runner = greedy_run
    reasons = {r["source_index"]: r["reason"] for r in rejects(out / "bad")}
    assert reasons == {
        0: "malformed_json",
        1: "missing_field",
        2: "empty_conversation",
        3: "prompt_too_long",
    }
    assert [r["id"] for r in records(out / "bad")] and len(records(out / "bad")) == 1
    manifest = json.loads((out / "bad" / "manifest.json").read_text())
    assert manifest["rejects"] == 4 and manifest["samples"] == 1 and manifest["done"]
    job_manifest = json.loads((out / "manifest.json").read_text())
    assert job_manifest["done"] and job_manifest["samples"] == 3


def test_metrics_follow_the_records(greedy_run):
    from prometheus_client import generate_latest

    out, runner = greedy_run
    text = generate_latest(runner.metrics.registry).decode()
    recs = records(out / "tools")
    stop = sum(1 for r in recs if r["finish_reason"] == "stop")
    # every series also names its GenerationJob (the job file's metadata.name; labels sorted)
    job = 'generationjob="test"'
    assert (
        f'draftgen_samples_total{{dataset="tools",finish_reason="stop",{job}}} {float(stop)}'
        in text
    )
    assert f'draftgen_rejects_total{{dataset="bad",{job},reason="malformed_json"}} 1.0' in text
    assert f"draftgen_job_done{{{job}}} 1.0" in text


def test_resumed_run_counts_what_is_on_disk(greedy_run, sglang_server, tmp_path):
    """A second run over a finished output does nothing, and its counters start from disk."""
    from prometheus_client import generate_latest

    out, first = greedy_run
    before = {p: p.read_bytes() for p in out.rglob("*.jsonl")}
    job = out.parent / "job.yaml"
    second = run_inprocess(job, sglang_server.url, out)
    assert {p: p.read_bytes() for p in out.rglob("*.jsonl")} == before
    text = generate_latest(second.metrics.registry).decode()
    total = sum(1 for _ in records(out / "tools"))
    got = sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('draftgen_samples_total{dataset="tools"')
    )
    assert got == total


@pytest.mark.parametrize(
    "mode,budget",
    [
        ("finish", {"completionTokens": 150}),
        ("abort", {"completionTokens": 150}),
        ("finish", {"totalTokens": 1200}),
    ],
)
def test_budget_is_met_within_one_sample(mode, budget, tmp_path, tiny_kimi, sglang_server):
    max_new = 16
    job = write_prompt_job(
        tmp_path,
        tiny_kimi,
        60,
        dataset={"budget": budget},
        sampling={"temperature": 1.0, "maxNewTokens": max_new, "seed": 3},
        generator={"onBudgetMet": mode},
    )
    run_inprocess(job, sglang_server.url, tmp_path / "out")
    recs = records(tmp_path / "out" / "p")
    if "completionTokens" in budget:
        limit, total = budget["completionTokens"], sum(r["completion_tokens"] for r in recs)
        sample = max_new
    else:
        limit = budget["totalTokens"]
        total = sum(r["completion_tokens"] + r["prompt_tokens"] for r in recs)
        sample = max_new + max(r["prompt_tokens"] for r in recs)
    # Within one sample of the budget: the last request is sent only while it is more likely
    # to fit than not, and nothing more is admitted than the budget is likely to hold.
    assert limit - sample < total < limit + sample
    assert all(r["finish_reason"] in ("stop", "length") for r in recs)
    assert all(r["completion_tokens"] == len(r["output_ids"]) for r in recs)
    assert len({r["id"] for r in recs}) == len(recs) < 60
    manifest = json.loads((tmp_path / "out" / "p" / "manifest.json").read_text())
    assert manifest["samples"] == len(recs) and manifest["done"] and not manifest["exhausted"]


def test_a_server_with_another_tokenizer_is_refused(tmp_path, sglang_server, repo):
    chatml = repo / ".cache" / "models" / "tiny-chatml"
    if not (chatml / "tokenizer.json").exists():
        pytest.skip("tiny-chatml is missing: run `make models`")
    job = write_prompt_job(
        tmp_path,
        chatml,
        2,
        model_extra={"specialTokens": [], "generationPrefix": None, "chatTemplateKwargs": {}},
    )
    proc = cli(*generate_command(job, tmp_path / "out", sglang_server.url))
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 3, log
    assert "different model or tokenizer" in log
    assert not list((tmp_path / "out").rglob("shard-*.jsonl"))


def _closed_port_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_replicas_share_the_work_and_a_dead_one_is_left_out(tmp_path, tiny_kimi, sglang_server):
    """Two URLs of the same server act as two replicas (both get requests); a third that never
    answers does not hold the job up."""
    job = write_prompt_job(
        tmp_path,
        tiny_kimi,
        16,
        sampling={"maxNewTokens": 4},
        generator={"concurrency": {"mode": "fixed", "maxRequests": 3}},
    )
    other = sglang_server.url.replace("127.0.0.1", "localhost")
    assert other != sglang_server.url
    servers = (sglang_server.url, other, _closed_port_url())
    proc = cli(*generate_command(job, tmp_path / "out", *servers, extra=("--health-timeout", "3")))
    log, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, log
    recs = records(tmp_path / "out" / "p")
    assert len(recs) == 16
    assert {r["meta"]["server"] for r in recs} == {sglang_server.url, other}


def test_no_healthy_server_exits_4(tmp_path, tiny_kimi):
    job = write_prompt_job(tmp_path, tiny_kimi, 2)
    proc = cli(
        *generate_command(
            job, tmp_path / "out", _closed_port_url(), extra=("--health-timeout", "1")
        )
    )
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 4, log
    assert "did not become healthy" in log
