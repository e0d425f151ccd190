"""Writing one JSONL file per split, for the formats trainers read as JSONL."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from draftgen.output.record import Record


def write_jsonl_splits(
    out_dir: Path,
    rows: Iterable[tuple[str, Record]],
    convert: Callable[[Record], dict[str, Any]],
) -> dict[str, Path]:
    """`OUT/<split>.jsonl` for each split that gets a row; returns the files written."""
    handles: dict[str, IO[str]] = {}
    paths: dict[str, Path] = {}
    try:
        for split, record in rows:
            fh = handles.get(split)
            if fh is None:
                paths[split] = Path(out_dir) / f"{split}.jsonl"
                fh = handles[split] = paths[split].open("w", encoding="utf-8")
            fh.write(json.dumps(convert(record), ensure_ascii=False) + "\n")
    finally:
        for fh in handles.values():
            fh.close()
    return paths
