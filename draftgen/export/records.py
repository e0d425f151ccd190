"""Reading a `draftgen generate` output directory (docs/output-format.md): records streamed shard
by shard, never the whole dataset in memory, and the manifests as written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from draftgen.contract import layout

REQUIRED_FIELDS = ("id", "dataset", "input_ids", "output_ids", "finish_reason")


class ExportError(Exception):
    """The export cannot go on; the message names the file or option and the fix."""


@dataclass(slots=True)
class ReadStats:
    """What the reader skipped, so nothing is lost silently."""

    torn_lines: list[str] = field(default_factory=list)
    """`file:line` of a last line cut short by a crash (no newline, not JSON); skipped."""


def dataset_dirs(root: Path) -> list[Path]:
    """Dataset directories of an output directory, in name order (the export order)."""
    root = Path(root)
    if not root.is_dir():
        raise ExportError(
            f"{root}: no such directory; give the directory `draftgen generate` wrote"
        )
    found = sorted(
        p
        for p in root.iterdir()
        if p.is_dir()
        and (
            any(layout.shard_index(f.name) is not None for f in p.iterdir())
            or layout.dataset_manifest(p).is_file()
        )
    )
    if not found:
        raise ExportError(
            f"{root}: no dataset directories with shard-*.jsonl or manifest.json; is this the "
            "output directory of `draftgen generate`?"
        )
    return found


def shard_paths(dataset_dir: Path) -> list[Path]:
    """`shard-NNNNN.jsonl` files of one dataset, in shard number order."""
    return [p for _, p in layout.shard_files(dataset_dir)]


def iter_records(dataset_dir: Path, stats: ReadStats | None = None) -> Iterator[dict[str, Any]]:
    """Every record of one dataset, shard by shard, line by line.

    A last line without its newline that does not parse is what a crash mid-write leaves: it is
    skipped (and noted in `stats`), since the generator rewrites that sample on resume. Any
    other bad line is damage the export must not paper over, so it raises."""
    for shard in shard_paths(dataset_dir):
        with shard.open("rb") as fh:
            lineno = 0
            for raw in fh:
                lineno += 1
                complete = raw.endswith(b"\n")
                if not raw.strip():
                    continue
                try:
                    record = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as err:
                    if not complete:
                        if stats is not None:
                            stats.torn_lines.append(f"{shard}:{lineno}")
                        continue
                    raise ExportError(
                        f"{shard}:{lineno}: not a JSON record ({err}); the shard is damaged in "
                        "the middle, which a crash cannot cause: restore it or remove the line"
                    ) from err
                _check_record(record, shard, lineno)
                yield record


def _check_record(record: Any, shard: Path, lineno: int) -> None:
    if not isinstance(record, dict):
        raise ExportError(f"{shard}:{lineno}: a record must be a JSON object")
    missing = [f for f in REQUIRED_FIELDS if f not in record]
    if missing:
        raise ExportError(
            f"{shard}:{lineno}: record lacks {', '.join(missing)}; see docs/output-format.md"
        )


def read_json(path: Path) -> dict[str, Any] | None:
    """A manifest, or None when it does not exist yet (a job that never finished a batch)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ExportError(f"{path}: not valid JSON ({err})") from err
    if not isinstance(data, dict):
        raise ExportError(f"{path}: a manifest must be a JSON object")
    return data


@dataclass(slots=True)
class Manifests:
    """The job manifest and each dataset's manifest (None where not written yet)."""

    job: dict[str, Any]
    datasets: dict[str, dict[str, Any] | None]

    @property
    def model(self) -> str | None:
        """The model as the job manifest names it (a location string)."""
        model = self.job.get("model")
        if isinstance(model, dict):
            model = model.get("tokenizer") or model.get("weights") or model.get("name")
        return model if isinstance(model, str) and model else None


def read_manifests(root: Path) -> Manifests:
    root = Path(root)
    job = read_json(layout.job_manifest(root)) or {}
    datasets = {d.name: read_json(layout.dataset_manifest(d)) for d in dataset_dirs(root)}
    return Manifests(job=job, datasets=datasets)
