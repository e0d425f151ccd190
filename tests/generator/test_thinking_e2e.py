"""`thinking: mix` end to end: `draftgen generate` against the real CPU SGLang server (tiny-kimi,
whose template is Kimi-K2.5's: `<think>` on, `<think></think>` off). Each record says its mode,
its prompt ends as the mode's does, the job manifest records the template date, and a resumed
run with another mode is refused."""

from __future__ import annotations

import json
from datetime import date

import pytest

from tests.generator.gen_helpers import cli, generate_command, records, write_prompt_job

pytestmark = pytest.mark.sglang

THINK, END_THINK = 163606, 163607


def test_a_mixed_dataset_records_each_conversations_mode(sglang_server, tiny_kimi, tmp_path):
    mix = {"thinking": "mix", "thinkingMix": {"ratio": 0.5, "seed": 3}}
    job = write_prompt_job(tmp_path, tiny_kimi, 8, dataset=mix, sampling={"maxNewTokens": 2})
    out = tmp_path / "out"
    proc = cli(*generate_command(job, out, sglang_server.url))
    log, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, log[-3000:]
    got = records(out / "p")
    assert len(got) == 8
    modes = {r["id"]: r["meta"]["thinking"] for r in got}
    assert set(modes.values()) == {True, False}
    for r in got:
        tail = [THINK] if r["meta"]["thinking"] else [THINK, END_THINK]
        assert r["input_ids"][-len(tail) :] == tail
        assert (r["input_ids"][-2] == THINK) is (not r["meta"]["thinking"])
    manifest = json.loads((out / "manifest.json").read_text())
    date.fromisoformat(manifest["template_date"])  # the day the job started, kept for resumes

    # the same job again: nothing left to do; with another seed: refused, naming the field
    changed = write_prompt_job(
        tmp_path,
        tiny_kimi,
        8,
        dataset={**mix, "thinkingMix": {"ratio": 0.5, "seed": 4}},
        sampling={"maxNewTokens": 2},
    )
    proc = cli(*generate_command(changed, out, sglang_server.url))
    log, _ = proc.communicate(timeout=600)
    assert proc.returncode == 3, log[-3000:]
    assert "spec.datasets[p].thinking changed" in log
