"""Export of records produced by the real SGLang server (tiny-kimi on the CPU): the records the
generator wrote go out with identical ids in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftgen.cli import main
from draftgen.export.records import iter_records

from .builders import THINK

pytestmark = pytest.mark.sglang


def _export(output: Path, fmt: str, to: Path, *extra: str) -> int:
    """`draftgen export` of `output` in `fmt`, truncated samples included: by default they are
    dropped, and with a tiny model at 24 tokens some always stop short of EOS, so keep them here
    to never face an empty export."""
    return main(
        ["export", str(output), "--format", fmt, "--out", str(to), *extra, "--include-truncated"]
    )


def test_real_records_export_with_identical_ids(generated, tmp_path, capsys):
    records = {r.id: r for d in ("chat", "tools") for r in iter_records(generated / d)}
    assert len(records) >= 5

    assert _export(generated, "speculators", tmp_path / "spec") == 0
    rows = [json.loads(x) for x in (tmp_path / "spec/train.jsonl").read_text().splitlines()]
    assert {r["id"] for r in rows} == set(records)
    for row in rows:
        rec = records[row["id"]]
        n = len(rec.input_ids)
        assert row["input_ids"] == rec.input_ids + rec.output_ids
        assert row["loss_mask"] == [0] * n + [1] * len(rec.output_ids)
        assert rec.input_ids[-1] == THINK and "<think>" in row["text"]
    tools = [r for r in rows if r["id"].startswith("tools/")]
    assert tools and all("<|im_system|>tool_declare<|im_middle|>" in r["text"] for r in tools)

    assert _export(generated, "specforge-conversations", tmp_path / "sf") == 0
    convs = [json.loads(x) for x in (tmp_path / "sf/train.jsonl").read_text().splitlines()]
    assert {c["id"] for c in convs} == set(records)
    assert all(
        c["conversations"][-1]["role"] == "assistant"
        and c["conversations"][-1]["content"].startswith("<think>")
        for c in convs
    )

    assert _export(generated, "parquet", tmp_path / "pq", "--validation-fraction", "0.3") == 0
    capsys.readouterr()
    assert main(["stats", str(generated), "--json"]) in (0, 1)
    stats = {d["dataset"]: d for d in json.loads(capsys.readouterr().out)["datasets"]}
    summary = json.loads((tmp_path / "pq/export-summary.json").read_text())["datasets"]
    for name, st in stats.items():
        assert summary[name]["records"] == st["samples"]
        assert summary[name]["completion_tokens"] == st["completion_tokens"]
        exported = sum(s["rows"] for s in summary[name]["splits"].values())
        assert exported == st["samples"]
        assert summary[name]["truncation_rate"] == pytest.approx(st["truncation_rate"], abs=1e-6)
