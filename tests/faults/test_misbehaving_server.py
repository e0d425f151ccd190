"""A server that stalls, answers 5xx, drops the connection or answers garbage: the generator times
out and retries what can be retried, then records a reject with the reason for each sample, and
the job finishes (nothing hangs, nothing crashes, nothing partial is written as a sample)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from draftgen.generator.prompts.samples import Sample
from draftgen.generator.run import Runner, Settings
from draftgen.spec import parse_job
from tests.jobs import job_document

from .misbehaving import Misbehaving

SAMPLES = 3


def _job(retries: int, timeout: float):
    return parse_job(
        job_document(
            "faulty",
            model={"weights": "/nonexistent/model"},
            sampling={"maxNewTokens": 8, "temperature": 0.0},
            generator={"retries": retries, "requestTimeoutSeconds": timeout},
            datasets=[{"name": "d", "source": "unused.jsonl", "format": "prompt"}],
        )
    )


def _source(dataset, skip, max_prompt):
    for i in range(SAMPLES):
        if f"d/row{i}/0" not in skip:
            yield Sample(f"d/row{i}/0", "d", i, 0, [11, 12, 13, i])


def _run(url: str, out: Path, retries: int, timeout: float = 30.0) -> Runner:
    runner = Runner(
        _job(retries, timeout),
        Settings(
            servers=[url],
            output=out,
            live_progress=False,
            backoff_base=0.01,
            health_timeout=10,
            manifest_interval=0.2,
        ),
        _source,
    )
    asyncio.run(asyncio.wait_for(runner.run(), 120))
    return runner


def _rejects(out: Path) -> list[dict]:
    path = out / "d" / "rejects.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


CASES = {
    # mode: (retries, request timeout, attempts per sample, words the reject's detail carries)
    "stall": (1, 1.0, 2, "no answer within the timeout"),
    "5xx": (2, 30.0, 3, "HTTP 503"),
    "reset": (2, 30.0, 3, "attempts; last"),
    "html": (2, 30.0, 1, "not JSON"),
    "truncated": (2, 30.0, 1, "not JSON"),
    "no_meta": (2, 30.0, 1, "without meta_info"),
    "bad_ids": (2, 30.0, 1, "integer output_ids"),
    "odd_finish": (2, 30.0, 1, "unknown finish_reason"),
    "abort": (2, 30.0, 3, "aborted the generation"),
}


@pytest.mark.parametrize("mode", list(CASES))
def test_each_sample_is_rejected_with_its_reason_and_the_job_finishes(mode, tmp_path):
    retries, timeout, attempts, words = CASES[mode]
    with Misbehaving(mode) as server:
        runner = _run(server.url, tmp_path, retries, timeout)
    rejects = _rejects(tmp_path)
    assert sorted(r["id"] for r in rejects) == [f"d/row{i}/0" for i in range(SAMPLES)]
    for r in rejects:
        assert r["reason"] == "request_failed"
        assert words in r["detail"], r["detail"]
        # What SGLang said on the last attempt: only an abort it decided itself is one.
        assert r.get("finish_reason") == ("abort" if mode == "abort" else None)
    # Retryable faults are retried (same sample, a new request id each attempt); garbage is not.
    assert len(server.generate_calls) == SAMPLES * attempts
    by_prompt: dict[tuple, list[str]] = {}
    for call in server.generate_calls:
        by_prompt.setdefault(tuple(call["input_ids"]), []).append(call["rid"])
        assert call["sampling_params"]["max_new_tokens"] == 8
    assert all(len(set(rids)) == attempts for rids in by_prompt.values())
    if mode == "stall":  # a timed-out request is aborted on the server, not left running
        assert set(server.aborts) >= {rid for rids in by_prompt.values() for rid in rids}
    # Nothing was written as a sample; the job ended with its dataset exhausted.
    assert not list((tmp_path / "d").glob("shard-*.jsonl")) or all(
        not p.read_text() for p in (tmp_path / "d").glob("shard-*.jsonl")
    )
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert manifest["samples"] == 0 and manifest["rejects"] == SAMPLES and manifest["done"]
    aborted = SAMPLES if mode == "abort" else 0
    assert manifest["finish_reasons"]["abort"] == manifest["quality"]["finish_reasons"]["abort"]
    assert manifest["finish_reasons"]["abort"] == aborted
    metrics = generate_latest(runner.metrics.registry).decode()
    assert (
        f'draftgen_rejects_total{{dataset="d",generationjob="faulty",reason="request_failed"}} '
        f"{float(SAMPLES)}" in metrics
    )
    assert (
        f'draftgen_aborted_samples_total{{dataset="d",generationjob="faulty"}} {float(aborted)}'
        in metrics
    )


def test_request_failed_rejects_are_retried_on_resume(tmp_path):
    """A server that failed every request yesterday may answer today: resume retries them
    (request_failed is not final), and records nothing twice when they fail again."""
    with Misbehaving("5xx") as server:
        _run(server.url, tmp_path, retries=0)
    with Misbehaving("5xx") as server:
        _run(server.url, tmp_path, retries=0)
    assert len(server.generate_calls) == SAMPLES  # asked again
    rejects = _rejects(tmp_path)
    assert len(rejects) == SAMPLES  # failed again: not appended again (issue 21)
    assert all(r["reason"] == "request_failed" for r in rejects)
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert manifest["rejects"] == SAMPLES  # counted once per sample, not once per run
