"""Class 1 of issue 21: a resumed run does not append rejects again for the same rows — not when
a sample failed again on a server that still fails (request_failed, retried on resume), and not
when rows were inserted above them in the source (their row numbers moved, their ids did not)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.generator.run import Runner, Settings
from draftgen.spec import parse_job
from tests.jobs import job_document

from .misbehaving import Misbehaving

ROWS = 4


def _job():
    return parse_job(
        job_document(
            "rejects",
            model={"weights": "/nonexistent/model"},
            sampling={"maxNewTokens": 8, "temperature": 0.0},
            generator={"retries": 0, "requestTimeoutSeconds": 30},
            datasets=[{"name": "d", "source": "unused.jsonl", "format": "prompt"}],
        )
    )


def _source(shift: int):
    """Two rows refused by the input side, two sent (and failed by the server); `shift` rows
    were inserted above them since the last run."""

    def source(dataset, skip, max_prompt):
        for i in range(ROWS):
            sid = f"d/row{i}/0"
            if sid in skip:
                continue
            if i % 2:
                yield Reject("d", i + shift, sid, "prompt_too_long", "too long")
            else:
                yield Sample(sid, "d", i + shift, 0, [11, 12, 13, i])

    return source


def _run(url: str, out: Path, shift: int) -> None:
    settings = Settings(
        servers=[url], output=out, live_progress=False, backoff_base=0.01, health_timeout=10
    )
    asyncio.run(asyncio.wait_for(Runner(_job(), settings, _source(shift)).run(), 120))


def test_resumes_do_not_append_the_same_rejects_again(tmp_path):
    for shift in (0, 0, 3):
        with Misbehaving("5xx") as server:
            _run(server.url, tmp_path, shift)
    lines = (tmp_path / "d" / "rejects.jsonl").read_text().splitlines()
    reasons = sorted(json.loads(line)["reason"] for line in lines)
    assert reasons == ["prompt_too_long"] * 2 + ["request_failed"] * 2, reasons
    manifest = json.loads((tmp_path / "d" / "manifest.json").read_text())
    assert manifest["rejects"] == ROWS  # each row counted once
