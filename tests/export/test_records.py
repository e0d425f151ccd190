"""Reading records: streamed in shard order, a crash's torn last line skipped, damage refused."""

from __future__ import annotations

import json

import pytest

from draftgen.export.records import ExportError, ReadStats, iter_records, read_manifests

from .builders import synthetic_records, write_output


def test_records_come_back_in_shard_order_across_shards(tmp_path):
    records = synthetic_records("chat", 11)
    root = write_output(tmp_path / "run", {"chat": records}, shard_size=3)
    # shard-00010 must sort after shard-00002 (numbers, not strings)
    (root / "chat" / "shard-00003.jsonl").rename(root / "chat" / "shard-00010.jsonl")
    assert [r.id for r in iter_records(root / "chat")] == [r["id"] for r in records]


def test_torn_last_line_is_skipped_and_reported(tmp_path):
    records = synthetic_records("chat", 5)
    root = write_output(tmp_path / "run", {"chat": records}, shard_size=10)
    shard = root / "chat" / "shard-00000.jsonl"
    torn = json.dumps(synthetic_records("chat", 6)[5])[:40]  # a crash mid-write, no newline
    shard.write_text(shard.read_text() + torn)
    stats = ReadStats()
    got = list(iter_records(root / "chat", stats))
    assert [r.id for r in got] == [r["id"] for r in records]
    assert stats.torn_lines == [f"{shard}:6"]


def test_damaged_middle_line_is_refused_with_its_place(tmp_path):
    root = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 3)}, shard_size=10)
    shard = root / "chat" / "shard-00000.jsonl"
    lines = shard.read_text().splitlines(keepends=True)
    lines[1] = '{"id": "chat/x/0", "broken\n'
    shard.write_text("".join(lines))
    with pytest.raises(ExportError, match="shard-00000.jsonl:2"):
        list(iter_records(root / "chat"))


def test_record_missing_a_field_is_refused(tmp_path):
    root = write_output(tmp_path / "run", {"chat": []})
    (root / "chat" / "shard-00000.jsonl").write_text(json.dumps({"id": "chat/a/0"}) + "\n")
    with pytest.raises(ExportError, match="lacks dataset, input_ids, output_ids"):
        list(iter_records(root / "chat"))


def test_manifests_are_read_and_name_the_model(output_dir):
    manifests = read_manifests(output_dir)
    assert manifests.model == "hf://moonshotai/Kimi-K2.5"
    assert set(manifests.datasets) == {"chat", "code"}
    assert manifests.datasets["chat"]["samples"] == 10


def test_a_directory_without_datasets_is_refused(tmp_path):
    with pytest.raises(ExportError, match="no dataset directories"):
        read_manifests(tmp_path)
