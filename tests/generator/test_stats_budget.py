"""`draftgen stats` against the budget: % of it, done or rows used up, overshoot, throughput,
rejects by reason, in spec order; `--json` the same fields; a half-written directory read as
resume reads it (torn shards named, not counted)."""

from __future__ import annotations

import json
from pathlib import Path

from draftgen.cli import main
from draftgen.output.ledger import Ledger
from draftgen.spec import Budget
from tests.export.builders import record

from .gen_helpers import write_jsonl


def _dataset(root: Path, name: str, budget: Budget, lengths, *, exhausted=False, t0=1000.0):
    """A dataset directory as the generator leaves it: records (written 2 s apart), rejects,
    and the ledger's own manifest."""
    led = Ledger(name, budget, exhausted=exhausted)
    records = []
    for i, (completion, finish) in enumerate(lengths):
        rec = record(name, i, [1] * 10, [163607] * completion, finish)
        rec["meta"]["created_at"] = t0 + 2.0 * i
        records.append(rec)
        led.add(10, completion, finish)
    write_jsonl(root / name / "shard-00000.jsonl", records)
    (root / name / "manifest.json").write_text(json.dumps(led.manifest().to_json()))
    return led


def _job(root: Path, ledgers: list[Ledger]) -> None:
    (root / "manifest.json").write_text(
        json.dumps(
            {"job": "j", "datasets": {led.dataset: led.manifest().to_json() for led in ledgers}}
        )
    )


def test_budget_state_overshoot_throughput_and_reasons_in_spec_order(tmp_path, capsys):
    code = _dataset(
        tmp_path, "zcode", Budget(completion_tokens=100), [(60, "stop"), (50, "length")]
    )
    chat = _dataset(
        tmp_path, "achat", Budget(max_samples=10), [(5, "stop")] * 3, exhausted=True, t0=1010.0
    )
    write_jsonl(
        tmp_path / "zcode" / "rejects.jsonl",
        [
            {"id": "x/1/0", "source_index": 7, "reason": "prompt_too_long"},
            {"id": "x/2/0", "source_index": 8, "reason": "prompt_too_long"},
            {"id": None, "source_index": 9, "reason": "malformed_json"},
        ],
    )
    _job(tmp_path, [code, chat])  # spec order: zcode, then achat
    assert main(["stats", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    z, a = doc["datasets"]
    assert (z["dataset"], a["dataset"]) == ("zcode", "achat")
    assert z["budget"] == {"completionTokens": 100} and z["budget_percent"] == 110.0
    assert z["state"] == "done (completionTokens)" and z["limit_met"] == "completionTokens"
    assert z["overshoot_completion_tokens"] == 10 and z["overshoot_percent"] == 10.0
    assert z["throughput_tokens_per_second"] == 55.0  # 110 tokens from t=1000 to t=1002
    assert z["truncated"] == 1 and z["truncation_rate"] == 0.5
    assert z["rejects"] == 3
    assert z["rejects_by_reason"] == {"malformed_json": 1, "prompt_too_long": 2}
    assert a["state"] == "done (rows used up)" and a["exhausted"] and a["done"]
    assert a["budget_percent"] == 30.0 and a["overshoot_samples"] == 0
    total = doc["total"]
    assert total["samples"] == 5 and total["completion_tokens"] == 125
    assert total["throughput_tokens_per_second"] == round(125 / 14, 3)  # t=1000 … t=1014

    # the table: the same figures, and the reasons under it
    assert main(["stats", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    lines = table.splitlines()
    assert lines[1].startswith("zcode") and lines[2].startswith("achat")
    for figure in ("done (completionTokens)", "100 tok", "110.0%", "10 (10.00%)", "55.0", "50.0%"):
        assert figure in lines[1], figure
    assert "done (rows used up)" in lines[2] and "10 samples" in lines[2]
    assert "  zcode: malformed_json 1, prompt_too_long 2" in lines


def test_half_written_directory_names_torn_shards(tmp_path, capsys):
    """A run cut mid-write, before its first manifest: the torn line is named, not counted."""
    good = [record("a", i, [1] * 4, [2] * 6) for i in range(3)]
    shard = tmp_path / "a" / "shard-00000.jsonl"
    write_jsonl(shard, good)
    shard.write_bytes(shard.read_bytes() + json.dumps(record("a", 3, [1], [2] * 6)).encode()[:40])
    assert main(["stats", str(tmp_path), "--json"]) == 0
    captured = capsys.readouterr()
    (a,) = json.loads(captured.out)["datasets"]
    assert a["samples"] == 3 and a["completion_tokens"] == 18 and a["unreadable_lines"] == 0
    assert a["torn_shards"] == ["shard-00000.jsonl"]
    assert a["budget"] is None and a["done"] is None and a["state"] == "-"
    assert "a/shard-00000.jsonl: torn last line" in captured.err


def test_old_openai_records_have_counts_and_no_budget(tmp_path, capsys):
    usage = {"prompt_tokens": 20, "completion_tokens": 70, "total_tokens": 90}
    write_jsonl(
        tmp_path / "old.jsonl",
        [{"choices": [{"finish_reason": "length"}], "usage": usage}],
    )  # an old file without its last newline is still whole: only shards can be torn
    (tmp_path / "old.jsonl").write_text((tmp_path / "old.jsonl").read_text().rstrip("\n"))
    assert main(["stats", str(tmp_path / "old.jsonl"), "--json"]) == 0
    (old,) = json.loads(capsys.readouterr().out)["datasets"]
    assert old["completion_tokens"] == 70 and old["truncated"] == 1 and old["shapes"] == ["openai"]
    assert old["budget_percent"] is None and old["torn_shards"] == []
