"""The data-quality report (draftgen/output/quality.py): finish reasons as SGLang said them, an
honest truncation count, shares, the exact 95th percentile, chains ended early, loops kept or
dropped; counted the same by the ledger (manifest) and by `draftgen stats`."""

from __future__ import annotations

import json
from collections import Counter

from draftgen.cli import main
from draftgen.output.ledger import Ledger
from draftgen.output.quality import QualityCounts, chain_end, percentile
from draftgen.output.record import Meta, Record, Reject
from draftgen.output.writer import DatasetWriter
from draftgen.spec import Budget


def _record(i: int, completion: int, finish: str = "stop", **meta) -> Record:
    return Record(
        id=f"chat/r{i}/0",
        dataset="chat",
        source_index=i,
        turn=0,
        input_ids=[1, 2, 3],
        output_ids=[200 + i % 7] * completion,
        prompt_tokens=3,
        completion_tokens=completion,
        finish_reason=finish,
        matched_stop=None,
        meta=Meta({"temperature": 0.0}, 0, 0.5, "http://127.0.0.1:1", 1, 1.7e9, **meta),
    )


def test_percentile_is_the_nearest_rank():
    assert percentile(Counter(range(1, 101)), 0.95) == 95
    assert percentile(Counter(range(1, 21)), 0.95) == 19
    assert percentile(Counter({10: 19, 1000: 1}), 0.95) == 10  # 19 of 20 at or below 10
    assert percentile(Counter({10: 18, 1000: 2}), 0.95) == 1000
    assert percentile(Counter({7: 1}), 0.95) == 7
    assert percentile(Counter(), 0.95) is None


def test_length_finished_records_are_counted_as_truncated():
    """speculators issue 835: 35 % of rows ended at the length limit and were reported as 0."""
    led = Ledger("chat", Budget())
    for i in range(100):
        led.add_record(_record(i, 64 if i < 35 else 20, "length" if i < 35 else "stop"))
    q = led.manifest().to_json()["quality"]
    assert q["finish_reasons"] == {"stop": 65, "length": 35, "abort": 0}
    assert q["truncated"] == 35 and q["truncation_rate"] == 0.35
    assert q["completion_tokens_mean"] == round((35 * 64 + 65 * 20) / 100, 2)
    assert q["completion_tokens_p95"] == 64


def test_shares_are_of_the_replies_read_and_unknown_without_any():
    q = QualityCounts()
    q.add_record(_record(0, 5))  # written without reply facts (no tokenizer, an older run)
    assert q.as_dict()["thinking_share"] is None and q.as_dict()["tool_call_share"] is None
    q.add_record(_record(1, 5, reply={"reasoning": True, "tool_call": False}))
    q.add_record(_record(2, 5, reply={"reasoning": True, "tool_call": True}))
    q.add_record(_record(3, 5, reply={"reasoning": False, "tool_call": False}))
    q.add_record(_record(4, 5, reply={"reasoning": False, "tool_call": False}))
    d = q.as_dict()
    assert d["replies_checked"] == 4 and d["thinking"] == 2 and d["tool_calls"] == 1
    assert d["thinking_share"] == 0.5 and d["tool_call_share"] == 0.25


def test_aborts_and_dropped_loops_come_from_rejects():
    q = QualityCounts()
    q.add_reject("request_failed", "abort")
    q.add_reject("request_failed", None)  # a timeout: SGLang never said abort
    q.add_reject("degenerate_repetition")
    q.add_record(_record(0, 80, "length", degenerate={"ngram": 8}))
    d = q.as_dict()
    assert d["finish_reasons"]["abort"] == 1
    assert d["degenerate"] == 2 and d["degenerate_dropped"] == 1


def test_chains_ended_early_are_those_not_complete():
    plain = _record(0, 5)
    assert chain_end(plain) is None
    line = plain.to_json()
    line["meta"]["chain_end"] = "tool_call_diverged"
    assert chain_end(Record.from_json(line)) == "tool_call_diverged"
    line["meta"]["chain_end"] = "complete"  # reached the conversation's last turn: not early
    assert chain_end(Record.from_json(line)) is None


def _write(root, records, rejects=()):
    writer = DatasetWriter(root / "chat", shard_max_records=100)
    ledger = Ledger("chat", Budget())
    for rec in records:
        writer.write_record(rec)
        ledger.add_record(rec)
    for rej in rejects:
        writer.write_reject(rej)
        ledger.add_reject(rej.reason, rej.finish_reason)
    writer.write_manifest(ledger.manifest())
    writer.close()
    return ledger


def test_stats_and_the_manifest_report_the_same(tmp_path, capsys):
    records = [
        _record(0, 40, "length", reply={"reasoning": True, "tool_call": False}),
        _record(1, 12, reply={"reasoning": True, "tool_call": True}),
        _record(2, 90, "length", reply={"reasoning": False, "tool_call": False}, degenerate={}),
        _record(3, 9, reply={"reasoning": False, "tool_call": False}),
    ]
    line = records[1].to_json()
    line["meta"]["chain_end"] = "tool_call_diverged"
    records[1] = Record.from_json(line)
    rejects = [
        Reject("chat", 7, "chat/r7/0", "request_failed", "aborted", 1.7e9, "abort"),
        Reject("chat", 8, "chat/r8/0", "degenerate_repetition", "loop", 1.7e9),
    ]
    _write(tmp_path, records, rejects)
    manifest = json.loads((tmp_path / "chat" / "manifest.json").read_text())
    assert main(["stats", str(tmp_path / "chat"), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)["datasets"][0]["quality"]
    assert stats == manifest["quality"]
    assert stats["finish_reasons"] == {"stop": 2, "length": 2, "abort": 1}
    assert stats["truncation_rate"] == 0.5 and stats["thinking_share"] == 0.5
    assert stats["chains_ended"] == {"tool_call_diverged": 1}
    assert stats["degenerate"] == 2 and stats["degenerate_dropped"] == 1
    assert stats["completion_tokens_p95"] == 90
    assert main(["stats", str(tmp_path / "chat")]) == 0
    text = capsys.readouterr().out
    assert "finish stop 2, length 2, abort 1; truncated 50.0%; thinking 50.0%" in text
    assert "degenerate 2 (1 dropped); chains ended early: tool_call_diverged 1" in text
