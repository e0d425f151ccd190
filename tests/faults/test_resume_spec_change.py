"""Class 1 of issue 21, end to end: real `draftgen generate` runs against the real server, the
job edited between them. A change of maxNewTokens is refused (exit 3, the field
named, nothing written); with --allow-spec-change it resumes as a new shard series; a lowered
maxSamples is said and counted."""

from __future__ import annotations

import json

import pytest
import yaml

from draftgen.contract.generator_cli import ExitCode

from .gen_run import Run, generate_args, prompt_rows, record_count, records, write_job, write_jsonl

pytestmark = [pytest.mark.sglang, pytest.mark.long]


def test_resume_after_job_changes(tmp_path, tiny_kimi, sglang_server):
    write_jsonl(tmp_path / "p.jsonl", prompt_rows(6))
    ds = {"name": "chat", "source": "p.jsonl", "format": "prompt", "budget": {"maxSamples": 4}}
    job = write_job(tmp_path, tiny_kimi, [ds])
    out = tmp_path / "out"
    code, log = Run(generate_args(job, sglang_server.url, out), tmp_path).finish()
    assert code == 0, log
    assert record_count(out) == 4

    doc = yaml.safe_load(job.read_text())
    doc["spec"]["sampling"]["maxNewTokens"] = 8
    doc["spec"]["datasets"][0]["budget"] = {"maxSamples": 6}
    job.write_text(yaml.safe_dump(doc))
    code, log = Run(generate_args(job, sglang_server.url, out), tmp_path).finish()
    assert code == ExitCode.INTEGRITY, log
    assert (
        "spec.datasets[chat].sampling.maxNewTokens changed from 12 to 8" in log
        and "--allow-spec-change" in log
    )
    assert "Traceback" not in log
    assert record_count(out) == 4  # nothing mixed in

    args = [*generate_args(job, sglang_server.url, out), "--allow-spec-change"]
    code, log = Run(args, tmp_path).finish()
    assert code == 0, log
    recs = records(out / "chat")
    assert len(recs) == 6 and len({r["id"] for r in recs}) == 6
    assert len((out / "chat" / "shard-00001.jsonl").read_text().splitlines()) == 2
    manifest = json.loads((out / "chat" / "manifest.json").read_text())
    assert [s["first_shard"] for s in manifest["series"]] == [0, 1]
    assert manifest["series"][1]["changed"] == ["spec.datasets[chat].sampling.maxNewTokens"]

    doc["spec"]["datasets"][0]["budget"] = {"maxSamples": 3}  # lowered below the 6 written
    job.write_text(yaml.safe_dump(doc))
    code, log = Run(generate_args(job, sglang_server.url, out), tmp_path).finish()
    assert code == 0, log
    assert "6 samples already written, more than budget.maxSamples 3" in log
    manifest = json.loads((out / "chat" / "manifest.json").read_text())
    assert manifest["samples"] == 6 and manifest["overshoot_samples"] == 3
    assert record_count(out) == 6
