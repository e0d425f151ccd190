"""Resume: the records on disk are the truth. Scan a dataset's shards, drop a torn last line,
and rebuild the ledger, the ids already done, and the lengths admission learns from. Manifests
are never read back: they are summaries, rewritten from the records."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from draftgen.contract import layout
from draftgen.output.fields import TOOL_FALLBACK, reject_key_of
from draftgen.output.ledger import Ledger
from draftgen.spec import Budget

log = logging.getLogger(__name__)


@dataclass
class DatasetState:
    """What one dataset's directory holds."""

    ledger: Ledger
    done_ids: set[str] = field(default_factory=set)
    lengths: list[int] = field(default_factory=list)
    """Completion lengths of the records, in file order."""
    next_shard: int = 0
    """Shard to append to."""
    records_in_shard: int = 0
    """Records already in that shard."""
    rejected: set[tuple] = field(default_factory=set)
    """Keys (`records.reject_key`) of rejects already recorded, so a resumed run does not repeat
    them. `request_failed` rejects are retried on resume and are not in here."""
    failed_before: set[tuple] = field(default_factory=set)
    """Keys of `request_failed` rejects already in the file: retried, and counted again if they
    fail again, but their line is not appended a second time."""
    torn_bytes: int = 0
    """Bytes of torn last lines dropped."""
    corrupt_lines: int = 0
    """Unreadable lines in the middle of a shard (skipped, never counted)."""
    duplicates: int = 0


def read_lines_dropping_torn(path: Path) -> Iterator[tuple[int, dict | None]]:
    """(line number, parsed object, or None when unreadable) for each line. The last line, when
    it lacks its newline or does not parse, is a write cut short by a crash: the file is
    truncated to where it began and it is not yielded. Unreadable lines elsewhere are yielded
    as None (kept in place, never counted)."""
    held: tuple[int, int, bool, dict | None] | None = None  # number, start, complete, obj
    offset = 0
    with open(path, "rb") as f:
        for number, raw in enumerate(f):
            if held is not None:
                yield held[0], held[3]
            obj = None
            complete = raw.endswith(b"\n")
            if complete:
                try:
                    parsed = json.loads(raw)
                    obj = parsed if isinstance(parsed, dict) else None
                except ValueError:
                    pass
            held = (number, offset, complete, obj)
            offset += len(raw)
    if held is None:
        return
    number, start, complete, obj = held
    if complete and obj is not None:
        yield number, obj
        return
    log.warning(
        "%s: dropping a torn last line (%d bytes) left by an interrupted write",
        path,
        offset - start,
    )
    with open(path, "r+b") as f:
        f.truncate(start)
        f.flush()
        os.fsync(f.fileno())


def scan_dataset(
    directory: Path, name: str, budget: Budget, *, shard_max_records: int
) -> DatasetState:
    """Rebuild one dataset's state from `directory` (which may not exist yet)."""
    state = DatasetState(ledger=Ledger(dataset=name, budget=budget))
    shards = layout.shard_files(directory)
    for index, path in shards:
        size_before = path.stat().st_size
        count = 0
        for _, rec in read_lines_dropping_torn(path):
            if rec is None:
                state.corrupt_lines += 1
                log.warning("%s: skipping an unreadable line in the middle of the shard", path)
                continue
            count += 1
            rid = rec.get("id")
            if not isinstance(rid, str):
                state.corrupt_lines += 1
                log.warning("%s: skipping a record without a string id", path)
                continue
            if rid in state.done_ids:
                state.duplicates += 1
                log.warning("%s: record %s appears twice; counting it once", path, rid)
                continue
            try:
                completion = int(rec.get("completion_tokens", len(rec["output_ids"])))
                prompt = int(rec.get("prompt_tokens", len(rec["input_ids"])))
            except (KeyError, TypeError, ValueError):
                state.corrupt_lines += 1
                continue
            state.done_ids.add(rid)
            state.lengths.append(completion)
            state.ledger.add(
                prompt, completion, rec.get("finish_reason", "stop"), _tool_fallback(rec)
            )
        state.torn_bytes += size_before - path.stat().st_size
        state.next_shard, state.records_in_shard = index, count
    rejects = layout.rejects_file(directory)
    if rejects.exists():
        size_before = rejects.stat().st_size
        for _, rej in read_lines_dropping_torn(rejects):
            if rej is None:
                continue
            reason = rej.get("reason", "unknown")
            key = reject_key_of(rej.get("id"), rej.get("source_index"), reason)
            if reason == "request_failed":
                # The server may answer this time: retried, counted again if it fails.
                state.failed_before.add(key)
                continue
            if key in state.rejected:
                continue
            state.rejected.add(key)
            state.ledger.add_reject(reason)
        state.torn_bytes += size_before - rejects.stat().st_size
    return state


def _tool_fallback(rec: dict) -> bool:
    """The record's sample had its tools declared in a fallback form (`meta.sample`)."""
    meta = rec.get("meta")
    sample = meta.get("sample") if isinstance(meta, dict) else None
    return isinstance(sample, dict) and bool(sample.get(TOOL_FALLBACK))
