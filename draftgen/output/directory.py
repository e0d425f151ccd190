"""Which dataset directories of an output directory are the job's: `draftgen stats` and `draftgen
export` count and export the same ones, and name the same ones as left out."""

from __future__ import annotations

from pathlib import Path

from draftgen.contract import layout
from draftgen.output.manifest import ManifestDamaged, read_manifest

__all__ = ["dataset_dirs", "job_datasets", "left_out"]


def job_datasets(root: Path) -> set[str] | None:
    """The datasets of the job as it last ran (the job manifest's `datasets`), or None when the
    manifest is missing or unreadable. A directory of a dataset since removed from the job is
    not part of the job's data (neither counted nor exported). `NewerSchema` when a newer
    draftgen wrote it."""
    root = Path(root)
    if not root.is_dir():
        return None
    try:
        data = read_manifest(layout.job_manifest(root))
    except ManifestDamaged:
        return None
    names = data.get("datasets") if data is not None else None
    return set(names) if isinstance(names, dict) else None


def dataset_dirs(root: Path) -> list[Path]:
    """Every dataset directory under `root` (one holding a shard, `rejects.jsonl` or a
    manifest), whether or not the job still has it, in name order."""
    return sorted(
        p
        for p in Path(root).iterdir()
        if p.is_dir()
        and (
            layout.shard_files(p)
            or layout.rejects_file(p).is_file()
            or layout.dataset_manifest(p).is_file()
        )
    )


def left_out(root: Path) -> list[Path]:
    """Dataset directories of datasets the job no longer has (neither counted nor exported)."""
    current = job_datasets(root)
    if current is None:
        return []
    return [p for p in dataset_dirs(root) if p.name not in current]
