"""The one reader of draftgen's JSONL files (shards and `rejects.jsonl`), with the one rule for a
torn last line that resume, `draftgen stats`, `draftgen top` and `draftgen export` share.

The writer appends whole lines, each ending in a newline (draftgen/output/writer.py), so:

- **The last line of a file is torn** when it lacks its newline, whatever it holds (even JSON
  that parses: the write was cut short before its last byte). Only a crash leaves such a line,
  and the sample it held is generated again on resume. It is never counted. Resume (`repair=True`) truncates the file to where
  that line began, so the writer appends after it and the sample is generated again; readers
  only name it (`Torn`).
- **Any other line that does not parse** (a whole line, newline and all, anywhere in the file)
  is damage a crash cannot cause. It is yielded as a `Line` whose `value` is None: resume and
  stats skip and count it (the writer appends after it), export refuses it naming `file:line`.
  It is never a crash of the reader.
- Empty lines are skipped.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import draftgen.safe_json as safe_json

__all__ = ["Line", "Torn", "read_lines"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    """1-based line number in the file."""
    value: dict[str, Any] | None
    """The parsed object; None: not a JSON object (damage in the middle of the file)."""
    error: str = ""
    """Why `value` is None."""


@dataclass(frozen=True, slots=True)
class Torn:
    """A torn last line (see the module docstring)."""

    path: Path
    number: int
    bytes: int

    def __str__(self) -> str:
        return f"{self.path}:{self.number}"


def _parse(raw: bytes, bounded: bool) -> tuple[dict[str, Any] | None, str]:
    try:
        value = safe_json.loads(raw.decode("utf-8")) if bounded else json.loads(raw)
    except (ValueError, RecursionError) as err:  # incl. huge numbers, deep nesting, non-UTF-8
        return None, f"not a JSON record ({err})"
    if not isinstance(value, dict):
        return None, "not a JSON object"
    return value, ""


def read_lines(
    path: Path,
    *,
    repair: bool = False,
    torn: list[Torn] | None = None,
    whole_lines: bool = True,
    bounded: bool = False,
) -> Iterator[Line]:
    """Every line of `path` but a torn last one, parsed. A torn last line is appended to `torn`
    and, with `repair`, cut off the file (resume: the writer appends after it).
    `whole_lines=False`: a file another tool wrote (`draftgen stats` reads those too), whose
    last line may lack its newline; it has no torn line, its last line is like any other.
    `bounded`: parse within draftgen.safe_json's limits (export, whose writers walk every value;
    slower, so resume and stats, which only count, do not)."""
    held: tuple[Line, int, bool] | None = None  # the line, where it starts, has its newline
    offset = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            if held is not None:
                yield held[0]
            value, error = _parse(raw, bounded)
            held = (Line(number, value, error), start, raw.endswith(b"\n"))
    if held is None:
        return
    line, start, complete = held
    if complete or not whole_lines:
        yield line
        return
    cut = Torn(Path(path), line.number, offset - start)
    if torn is not None:
        torn.append(cut)
    if repair:
        log.warning(
            "%s: dropping a torn last line (%d bytes) left by an interrupted write",
            path,
            cut.bytes,
        )
        with open(path, "r+b") as f:
            f.truncate(start)
            f.flush()
            os.fsync(f.fileno())
