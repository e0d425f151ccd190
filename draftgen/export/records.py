"""Reading a `draftgen generate` output directory (docs/output-format.md): records streamed shard
by shard, never the whole dataset in memory, and the manifests as written. A damaged shard
line is an `ExportError` naming `file:line`; a damaged manifest is reported and left out (every
count of the export comes from the records)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from draftgen.contract import layout
from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError
from draftgen.output import directory
from draftgen.output.lines import Torn, read_lines
from draftgen.output.manifest import ManifestDamaged as _Damaged
from draftgen.output.manifest import read_manifest
from draftgen.output.record import BadRecord, Record


class ExportError(DraftgenError):
    """The export cannot go on; the message names the file or option and the fix."""

    exit_code = ExitCode.INVALID
    fix = "fix what the message names (the output directory, --out or the options)"

    def report(self) -> list[str]:
        return [f"draftgen export: {self}"]


@dataclass(slots=True)
class ReadStats:
    """What the reader skipped, so nothing is lost silently."""

    torn_lines: list[str] = field(default_factory=list)
    """`file:line` of a torn last line (draftgen/output/lines.py: a write cut short); skipped."""


def left_out_dirs(root: Path) -> list[Path]:
    """Dataset directories of datasets the job no longer has (not counted, not exported)."""
    return directory.left_out(root)


def dataset_dirs(root: Path) -> list[Path]:
    """Dataset directories of an output directory, in name order (the export order): those of
    the job's current datasets when the job manifest names them (see `job_datasets`)."""
    root = Path(root)
    if not root.is_dir():
        raise ExportError(
            f"{root}: no such directory; give the directory `draftgen generate` wrote"
        )
    current = directory.job_datasets(root)
    found = [p for p in directory.dataset_dirs(root) if current is None or p.name in current]
    if not found:
        raise ExportError(
            f"{root}: no dataset directories with shard-*.jsonl or manifest.json; is this the "
            "output directory of `draftgen generate`?"
        )
    return found


def shard_paths(dataset_dir: Path) -> list[Path]:
    """`shard-NNNNN.jsonl` files of one dataset, in shard number order."""
    return [p for _, p in layout.shard_files(dataset_dir)]


def iter_records(dataset_dir: Path, stats: ReadStats | None = None) -> Iterator[Record]:
    """Every record of one dataset, shard by shard, line by line.

    A torn last line (draftgen/output/lines.py) is what a crash mid-write leaves: it is skipped
    (and noted in `stats`), since the generator writes that sample again on resume. Any other
    bad line is damage the export must not paper over, so it raises."""
    for shard in shard_paths(dataset_dir):
        torn: list[Torn] = []
        for line in read_lines(shard, torn=torn, bounded=True):
            if line.value is None:
                raise ExportError(
                    f"{shard}:{line.number}: {line.error}; the shard is damaged in the middle, "
                    "which a crash cannot cause: restore it or remove the line"
                )
            try:
                yield Record.from_json(line.value)
            except BadRecord as err:
                raise ExportError(
                    f"{shard}:{line.number}: {err}, which the generator never writes: the "
                    "shard is damaged; restore it or remove the line (see "
                    "docs/output-format.md)"
                ) from None
        if stats is not None:
            stats.torn_lines += [str(t) for t in torn]


class ManifestDamaged(ExportError):
    """A manifest that cannot be read; the export goes on from the records."""

    exit_code = ExitCode.INVALID
    fix = "restore the manifest, or run `draftgen generate` on the output again to rewrite it"


def read_json(path: Path) -> dict[str, Any] | None:
    """A manifest, or None when it does not exist yet (a job that never finished a batch).
    Raises `ManifestDamaged` when it is not a JSON object (garbage, non-UTF-8, too deep), and
    `NewerSchema` when a newer draftgen wrote it."""
    try:
        return read_manifest(path)
    except _Damaged as err:
        raise ManifestDamaged(str(err)) from None


def _read_manifest(path: Path, damaged: list[str]) -> dict[str, Any] | None:
    # The records are the truth and every count of the export comes from them: a damaged
    # manifest only loses what it alone holds (model, budget), and is reported.
    try:
        return _typed(read_json(path))
    except ManifestDamaged as err:
        damaged.append(str(err))
        return None


_TYPES: dict[str, Any] = {
    "job": str,
    "model": (str, dict),
    "budget": dict,
    "overshoot_completion_tokens": int,
    "samples": int,
}


def _typed(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """The manifest without the fields the export reads that have the wrong type."""
    if data is None:
        return None
    out = {
        k: v
        for k, v in data.items()
        if k not in _TYPES or (isinstance(v, _TYPES[k]) and not isinstance(v, bool))
    }
    if isinstance(out.get("budget"), dict):
        out["budget"] = {k: v for k, v in out["budget"].items() if type(v) is int or v is None}
    return out


@dataclass(slots=True)
class Manifests:
    """The job manifest and each dataset's manifest (None where not written yet or damaged)."""

    job: dict[str, Any]
    datasets: dict[str, dict[str, Any] | None]
    damaged: list[str] = field(default_factory=list)
    """Manifests that could not be read (`file: why`); the export was built from the records."""

    @property
    def model(self) -> str | None:
        """The model as the job manifest names it (a location string)."""
        model = self.job.get("model")
        if isinstance(model, dict):
            model = model.get("tokenizer") or model.get("weights") or model.get("name")
        return model if isinstance(model, str) and model else None


def read_manifests(root: Path) -> Manifests:
    root = Path(root)
    damaged: list[str] = []
    job = _read_manifest(layout.job_manifest(root), damaged) or {}
    datasets = {
        d.name: _read_manifest(layout.dataset_manifest(d), damaged) for d in dataset_dirs(root)
    }
    return Manifests(job=job, datasets=datasets, damaged=damaged)
