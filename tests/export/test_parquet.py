"""The Parquet export: ids identical to the records, loadable by `datasets` offline, and a card
whose counts match the job's manifests."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from draftgen.cli import main
from draftgen.export.records import iter_records

from .builders import TOOL_SECTION, synthetic_records, write_output


@pytest.fixture
def offline_datasets(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    import datasets

    return datasets


def _export(src, out, *extra):
    assert main(["export", str(src), "--format", "parquet", "--out", str(out), *extra]) == 0


def _parquet_rows(out):
    rows = {}
    for path in sorted((out / "data").glob("*.parquet")):
        split = path.name.split("-")[0]
        for row in pq.read_table(path).to_pylist():
            rows[row["id"]] = (split, row)
    return rows


def test_ids_are_identical_to_the_records(output_dir, tmp_path):
    out = tmp_path / "pq"
    _export(output_dir, out, "--include-truncated")
    rows = _parquet_rows(out)
    records = [r for d in ("chat", "code") for r in iter_records(output_dir / d)]
    assert len(rows) == len(records) == 17
    for record in records:
        _, row = rows[record.id]
        assert row["input_ids"] == record.input_ids
        assert row["output_ids"] == record.output_ids
        assert row["finish_reason"] == record.finish_reason
        assert record.meta is not None and json.loads(row["meta"]) == record.meta.to_json()
    assert any(TOOL_SECTION in row["output_ids"] for _, row in rows.values())


def test_loads_with_datasets_offline_with_both_splits(output_dir, tmp_path, offline_datasets):
    out = tmp_path / "pq"
    _export(output_dir, out, "--validation-fraction", "0.3", "--split-seed", "1")
    loaded = offline_datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    assert set(loaded) == {"train", "validation"}
    assert loaded["train"].features["input_ids"].feature.dtype == "int64"
    by_id = {r["id"]: r for split in loaded.values() for r in split}
    for record in iter_records(output_dir / "code"):
        assert by_id[record.id]["output_ids"] == record.output_ids
    on_disk = _parquet_rows(out)
    for split, ds in loaded.items():
        assert all(on_disk[r["id"]][0] == split for r in ds)


def _card_table(card: str) -> dict[str, list[str]]:
    section = card.split("## Datasets")[1].split("\n\n")[1]
    rows = [line.strip("|").split("|") for line in section.splitlines()[2:]]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows}


def test_card_counts_match_the_manifests(output_dir, tmp_path):
    out = tmp_path / "pq"
    _export(output_dir, out)
    card = (out / "README.md").read_text()
    header = re.match(r"^---\n(.*?)\n---\n", card, re.S)
    assert header and "data/train-*.parquet" in header.group(1)
    table = _card_table(card)
    for name in ("chat", "code"):
        manifest = json.loads((output_dir / name / "manifest.json").read_text())
        records, _, _, truncated, rate, dropped, _ = table[name]
        assert int(records.replace(",", "")) == manifest["samples"]
        assert int(truncated) == manifest["finish_reasons"]["length"]
        assert rate == f"{manifest['truncation_rate']:.1%}"
        assert int(dropped) == manifest["finish_reasons"]["length"]  # dropped by default
    assert "moonshotai/Kimi-K2.5" in card
    assert '"temperature": 1.0' in card and "completionTokens 1,000" in card
    summary = json.loads((out / "export-summary.json").read_text())
    assert summary["datasets"]["chat"]["splits"]["train"]["rows"] == 8
    histogram = card.split("## Completion lengths")[1].split("```")[1].strip().splitlines()
    assert sum(int(line.split()[1].replace(",", "")) for line in histogram) == 8 + 7
    assert histogram[0].split()[0] == "0–15" and "#" in histogram[0]


def test_an_existing_export_is_not_overwritten_unless_asked(output_dir, tmp_path, capsys):
    out = tmp_path / "pq"
    _export(output_dir, out)
    assert main(["export", str(output_dir), "--format", "parquet", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    _export(output_dir, out, "--overwrite", "--include-truncated")
    assert len(_parquet_rows(out)) == 17
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_files_roll_over_and_row_groups_stay_bounded(tmp_path):
    from draftgen.export import parquet
    from draftgen.export.select import ExportOptions, ExportSummary, export_rows

    src = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 25)})
    files = parquet.write(
        tmp_path / "out", export_rows(src, ExportOptions(), ExportSummary()), rows_per_file=10
    )
    assert [f.name for f in files["train"]] == [
        "train-00000.parquet",
        "train-00001.parquet",
        "train-00002.parquet",
    ]
    assert [pq.read_metadata(f).num_rows for f in files["train"]] == [10, 10, 5]


def test_card_counts_match_draftgen_stats(output_dir, tmp_path, capsys):
    out = tmp_path / "pq"
    _export(output_dir, out, "--validation-fraction", "0.2")
    capsys.readouterr()
    assert main(["stats", str(output_dir), "--json"]) == 0
    stats = {d["dataset"]: d for d in json.loads(capsys.readouterr().out)["datasets"]}
    table = _card_table((out / "README.md").read_text())
    summary = json.loads((out / "export-summary.json").read_text())["datasets"]
    assert set(stats) == set(table) == set(summary) == {"chat", "code"}
    for name, st in stats.items():
        records, exported, _, truncated, rate, dropped, _ = table[name]
        assert int(records) == st["samples"]
        assert rate == f"{st['truncation_rate']:.1%}"
        assert int(truncated) == round(st["truncation_rate"] * st["samples"])
        train, validation = (int(x) for x in exported.split(" / "))
        assert train + validation == st["samples"] - int(dropped)
        assert summary[name]["prompt_tokens"] == st["prompt_tokens"]
        assert summary[name]["completion_tokens"] == st["completion_tokens"]


def test_card_shows_shared_sampling_and_names_per_request_ones(tmp_path):
    records = synthetic_records("chat", 3)
    for n, r in enumerate(records):
        r["meta"]["sampling"] = {"temperature": 0.6, "top_p": 0.95, "sampling_seed": 1000 + n}
    src = write_output(tmp_path / "run", {"chat": records})
    _export(src, tmp_path / "pq")
    card = (tmp_path / "pq" / "README.md").read_text()
    assert (
        'sampling {"temperature": 0.6, "top_p": 0.95} (varying per request: sampling_seed)'
    ) in card
