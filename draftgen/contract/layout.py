"""The output directory's layout (docs/output-format.md), written by `draftgen generate` and read
by resume, `draftgen stats` and `draftgen export`:

    DIR/manifest.json                    the job manifest
    DIR/<dataset>/shard-NNNNN.jsonl      records, NNNNN from 00000 upwards
    DIR/<dataset>/rejects.jsonl          rows and requests that were rejected
    DIR/<dataset>/manifest.json          the dataset's manifest
"""

from __future__ import annotations

import re
from pathlib import Path

MANIFEST_FILE = "manifest.json"
REJECTS_FILE = "rejects.jsonl"
RECORD_SUFFIX = ".jsonl"
SHARD_PREFIX = "shard-"
SHARD_DIGITS = 5

_SHARD_RE = re.compile(rf"^{SHARD_PREFIX}(\d{{{SHARD_DIGITS},}}){re.escape(RECORD_SUFFIX)}$")


def job_manifest(output: Path) -> Path:
    return Path(output) / MANIFEST_FILE


def dataset_dir(output: Path, dataset: str) -> Path:
    return Path(output) / dataset


def dataset_manifest(dataset_directory: Path) -> Path:
    return Path(dataset_directory) / MANIFEST_FILE


def rejects_file(dataset_directory: Path) -> Path:
    return Path(dataset_directory) / REJECTS_FILE


def shard_name(index: int) -> str:
    """`3` → `shard-00003.jsonl`; past 99999 the number simply grows."""
    return f"{SHARD_PREFIX}{index:0{SHARD_DIGITS}d}{RECORD_SUFFIX}"


def shard_file(dataset_directory: Path, index: int) -> Path:
    return Path(dataset_directory) / shard_name(index)


def shard_index(name: str) -> int | None:
    """The shard number of a file name, or None when it is not a shard."""
    m = _SHARD_RE.match(name)
    return int(m.group(1)) if m else None


def shard_files(dataset_directory: Path) -> list[tuple[int, Path]]:
    """(number, path) of a dataset's shards in number order; none when the directory is absent."""
    directory = Path(dataset_directory)
    if not directory.is_dir():
        return []
    found = [(i, p) for p in directory.iterdir() if (i := shard_index(p.name)) is not None]
    return sorted(found)
