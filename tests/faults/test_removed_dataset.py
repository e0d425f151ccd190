"""A dataset removed from the job between runs: its directory stays on the volume, but `stats`
and `export` follow the job's current datasets (the job manifest the last run wrote) — the old
directory is neither counted nor exported, and a note names it."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from draftgen.cli import main
from tests.export.builders import synthetic_records, write_output


def _drop_from_job(root, name: str) -> None:
    # What the next run's manifest looks like once `name` is no longer in spec.datasets.
    job = json.loads((root / "manifest.json").read_text())
    del job["datasets"][name]
    (root / "manifest.json").write_text(json.dumps(job))


def _output(tmp_path):
    root = write_output(
        tmp_path / "run",
        {"chat": synthetic_records("chat", 5), "old": synthetic_records("old", 7)},
    )
    _drop_from_job(root, "old")
    return root


def test_stats_counts_only_the_jobs_current_datasets(tmp_path, capsys):
    root = _output(tmp_path)
    assert main(["stats", str(root), "--json"]) == 0
    captured = capsys.readouterr()
    stats = json.loads(captured.out)
    assert [d["dataset"] for d in stats["datasets"]] == ["chat"]
    assert stats["datasets"][0]["samples"] == 5
    assert f"{root / 'old'} is not counted" in captured.err


def test_export_leaves_out_a_removed_dataset(tmp_path, capsys):
    root = _output(tmp_path)
    out = tmp_path / "export"
    assert main(["export", str(root), "--format", "parquet", "--out", str(out)]) == 0
    ids = [r["id"] for p in (out / "data").glob("*.parquet") for r in pq.read_table(p).to_pylist()]
    assert sorted(ids) == sorted(r["id"] for r in synthetic_records("chat", 5))
    summary = json.loads((out / "export-summary.json").read_text())
    assert list(summary["datasets"]) == ["chat"]
    assert f"{root / 'old'} is left out" in capsys.readouterr().err


def test_without_a_job_manifest_every_directory_counts(tmp_path):
    root = _output(tmp_path)
    (root / "manifest.json").unlink()  # nothing says which datasets the job has
    out = tmp_path / "export"
    assert main(["export", str(root), "--format", "parquet", "--out", str(out)]) == 0
    summary = json.loads((out / "export-summary.json").read_text())
    assert sorted(summary["datasets"]) == ["chat", "old"]
