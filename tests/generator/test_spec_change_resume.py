"""Class 1 of issue 21: a resumed run never mixes samples of a changed job into a dataset. Each
change that shapes a sample is refused naming the field and the ways forward; with
`--allow-spec-change` a new shard series starts and is recorded; budgets may change freely and
a lowered budget below what exists is said and counted."""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from draftgen.contract import layout
from draftgen.generator.records import write_manifests
from draftgen.generator.scheduling.datasets import open_datasets
from draftgen.generator.telemetry.metrics import GeneratorMetrics
from draftgen.output.fingerprint import FINGERPRINT_FILE, SpecChanged
from draftgen.output.record import Record
from draftgen.spec import parse_job
from tests.jobs import job_document

BASE: dict[str, Any] = {
    "model": {"weights": "/models/a", "chatTemplateKwargs": {"thinking": True}},
    "server": {"tensorParallelSize": 1},
    "sampling": {"temperature": 0.0, "maxNewTokens": 12},
    "datasets": [{"name": "chat", "source": "p.jsonl", "format": "messages"}],
}


def _job(edit=None):
    spec = copy.deepcopy(BASE)
    if edit:
        edit(spec)
    return parse_job(job_document("test", **spec))


def _write_records(out: Path, n: int, shard: int = 0) -> None:
    d = layout.dataset_dir(out, "chat")
    d.mkdir(parents=True, exist_ok=True)
    with open(layout.shard_file(d, shard), "a") as f:
        for i in range(n):
            f.write(json.dumps(_record(f"chat/r{shard}-{i}/0")) + "\n")


def _record(rid: str) -> dict:
    return {
        "id": rid,
        "dataset": "chat",
        "input_ids": [1, 2],
        "output_ids": [3],
        "finish_reason": "stop",
    }


def _open(out: Path, job, **kw):
    return open_datasets(job, out, GeneratorMetrics(), **kw)


def _set(path: str, value: Any):
    def edit(spec: dict) -> None:
        keys = path.split(".")
        node = spec
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node.setdefault(k, {})
        node[keys[-1]] = value

    return edit


CHANGES = [
    ("model.weights", "/models/b", "spec.model.weights"),
    ("model.chatTemplateKwargs", {"thinking": False}, "spec.model.chatTemplateKwargs"),
    ("model.tokenizer", "/tokenizers/t", "spec.model.tokenizer"),
    ("model.generationPrefix", "<think>", "spec.model.generationPrefix"),
    ("sampling.maxNewTokens", 20, "spec.datasets[chat].sampling.maxNewTokens"),
    ("sampling.temperature", 0.7, "spec.datasets[chat].sampling.temperature"),
    ("sampling.topK", 5, "spec.datasets[chat].sampling.topK"),
    ("datasets.0.sampling", {"maxNewTokens": 30}, "spec.datasets[chat].sampling.maxNewTokens"),
    ("datasets.0.source", "other.jsonl", "spec.datasets[chat].source"),
    ("datasets.0.format", "sharegpt", "spec.datasets[chat].format"),
    ("datasets.0.selection", {"mode": "shuffle", "seed": 3}, "spec.datasets[chat].selection"),
    ("datasets.0.turns", "all", "spec.datasets[chat].turns"),
]


@pytest.mark.parametrize(("path", "value", "field"), CHANGES, ids=[c[0] for c in CHANGES])
def test_a_change_that_shapes_samples_is_refused_naming_the_field(tmp_path, path, value, field):
    _open(tmp_path, _job())
    _write_records(tmp_path, 3)
    with pytest.raises(SpecChanged) as err:
        _open(tmp_path, _job(_set(path, value)))
    message = str(err.value)
    assert message.startswith(f"{field} changed from ")
    assert "--output" in message and "--allow-spec-change" in message
    _open(tmp_path, _job())  # the unchanged job still resumes


def test_a_change_before_any_record_is_not_a_mix(tmp_path):
    _open(tmp_path, _job())
    _open(tmp_path, _job(_set("sampling.maxNewTokens", 20)))  # nothing written yet: no refusal


def test_allow_spec_change_starts_a_new_shard_series_recorded_in_the_manifest(tmp_path):
    job = _job()
    _open(tmp_path, job)
    _write_records(tmp_path, 3)
    changed = _job(_set("sampling.maxNewTokens", 20))
    [ds] = _open(tmp_path, changed, allow_spec_change=True)
    assert ds.state.next_shard == 1 and ds.state.records_in_shard == 0
    assert len(ds.state.done_ids) == 3  # earlier records stay done: nothing generated twice
    ds.writer.write_record(Record.from_json(_record("chat/new/0")))
    ds.writer.close()
    assert (tmp_path / "chat" / "shard-00001.jsonl").exists()
    write_manifests(tmp_path, changed, [ds], 0.0, GeneratorMetrics())
    series = json.loads((tmp_path / "chat" / "manifest.json").read_text())["series"]
    assert [s["first_shard"] for s in series] == [0, 1]
    assert series[1]["changed"] == ["spec.datasets[chat].sampling.maxNewTokens"]
    recorded = json.loads((tmp_path / "chat" / FINGERPRINT_FILE).read_text())["series"]
    assert recorded[1]["fingerprint"]["spec.datasets[chat].sampling.maxNewTokens"] == 20
    # The new series is now the reference: resuming it needs no flag, the old job is refused.
    _open(tmp_path, changed)
    with pytest.raises(SpecChanged, match="from 20 to 12"):
        _open(tmp_path, job)


@pytest.mark.parametrize(
    "budget", [{"maxSamples": 100}, {"maxSamples": 1}, {"completionTokens": 5}, {}]
)
def test_budgets_raised_or_lowered_are_not_a_spec_change(tmp_path, budget):
    _open(tmp_path, _job())
    _write_records(tmp_path, 3)
    _open(tmp_path, _job(_set("datasets.0.budget", budget)))


def test_a_lowered_max_samples_below_what_exists_is_said_and_counted(tmp_path, caplog):
    _open(tmp_path, _job())
    _write_records(tmp_path, 8)
    job = _job(_set("datasets.0.budget", {"maxSamples": 3}))
    caplog.set_level(logging.WARNING)
    [ds] = _open(tmp_path, job)
    assert ds.ledger.done
    write_manifests(tmp_path, job, [ds], 0.0, GeneratorMetrics())
    manifest = json.loads((tmp_path / "chat" / "manifest.json").read_text())
    assert manifest["samples"] == 8
    assert manifest["overshoot_samples"] == 5
    assert "8 samples already written, more than budget.maxSamples 3" in caplog.text
