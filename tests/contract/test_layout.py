"""The output layout: the names the writer makes are the names the readers find."""

from __future__ import annotations

from pathlib import Path

from draftgen.contract import layout


def test_shard_names_round_trip_and_sort_by_number(tmp_path: Path) -> None:
    d = layout.dataset_dir(tmp_path, "code")
    d.mkdir()
    for i in (10, 2, 100000):
        layout.shard_file(d, i).write_text("")
    layout.rejects_file(d).write_text("")
    layout.dataset_manifest(d).write_text("{}")
    (d / "shard-7.jsonl").write_text("")  # not a name the writer makes
    assert layout.shard_name(2) == "shard-00002.jsonl"
    assert [i for i, _ in layout.shard_files(d)] == [2, 10, 100000]


def test_files_of_a_dataset_sit_in_its_directory(tmp_path: Path) -> None:
    d = layout.dataset_dir(tmp_path, "chat")
    assert d == tmp_path / "chat"
    assert layout.job_manifest(tmp_path) == tmp_path / "manifest.json"
    assert layout.dataset_manifest(d) == d / "manifest.json"
    assert layout.rejects_file(d) == d / "rejects.jsonl"
    assert layout.shard_index(layout.rejects_file(d).name) is None
    assert layout.shard_files(tmp_path / "absent") == []
