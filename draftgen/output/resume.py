"""Resume: the records on disk are the truth. Scan a dataset's shards, drop a torn last line
(draftgen/output/lines.py: the one rule), and rebuild the ledger, the ids already done, and the lengths admission learns from. Manifests
are never read back: they are summaries, rewritten from the records."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from draftgen.contract import layout
from draftgen.output.ledger import Ledger
from draftgen.output.lines import Torn, read_lines
from draftgen.output.manifest import ManifestDamaged, read_manifest
from draftgen.output.quality import DEGENERATE_REASON
from draftgen.output.record import BadRecord, Record, Reject
from draftgen.spec import Budget

log = logging.getLogger(__name__)

CHAIN_PROMPT_TAIL = 32  # = generator's chains.PROMPT_TAIL (the output layer imports no generator)


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
    chains_open: dict[str, dict[int, tuple[list[int], list[int]]]] = field(default_factory=dict)
    """`history: regenerated`: each chain not ended, per turn written the last ids of its prompt
    and its output ids (the next prompt is rebuilt from them; only chains in flight or cut by a
    budget are held)."""
    chains_ended: set[str] = field(default_factory=set)
    """Chains whose last record says why they ended (`meta.chain_end`)."""


def scan_dataset(
    directory: Path, name: str, budget: Budget, *, shard_max_records: int
) -> DatasetState:
    """Rebuild one dataset's state from `directory` (which may not exist yet)."""
    state = DatasetState(ledger=Ledger(dataset=name, budget=budget))
    # Only the version is read: appending records of this schema to a newer one's would mix
    # two formats in one dataset.
    try:
        read_manifest(layout.dataset_manifest(directory))
    except ManifestDamaged:
        pass
    torn: list[Torn] = []
    for index, path in layout.shard_files(directory):
        count = 0
        for line in read_lines(path, repair=True, torn=torn):
            if line.value is None:
                state.corrupt_lines += 1
                log.warning("%s:%d: skipping an unreadable line in the middle", path, line.number)
                continue
            count += 1
            try:
                rec = Record.from_json(line.value, strict=False)
            except BadRecord as err:
                state.corrupt_lines += 1
                log.warning(
                    "%s:%d: skipping a line that is not a record: %s", path, line.number, err
                )
                continue
            if rec.id in state.done_ids:
                state.duplicates += 1
                log.warning("%s: record %s appears twice; counting it once", path, rec.id)
                continue
            state.done_ids.add(rec.id)
            state.lengths.append(rec.completion_tokens)
            state.ledger.add_record(rec)
            _note_chain(state, rec)
        state.next_shard, state.records_in_shard = index, count
    rejects = layout.rejects_file(directory)
    if rejects.exists():
        for line in read_lines(rejects, repair=True, torn=torn):
            if line.value is None:
                continue
            rej = Reject.from_json(line.value)
            if rej.reason == "request_failed":
                # The server may answer this time: retried, counted again if it fails.
                state.failed_before.add(rej.key)
                continue
            if rej.key in state.rejected:
                continue
            state.rejected.add(rej.key)
            state.ledger.add_reject(rej.reason, rej.finish_reason)
            if rej.reason == DEGENERATE_REASON and rej.id is not None:
                state.done_ids.add(rej.id)  # answered, and dropped: a rerun would loop again
    state.torn_bytes = sum(t.bytes for t in torn)
    return state


def _note_chain(state: DatasetState, rec: Record) -> None:
    chain = rec.meta.chain if rec.meta is not None else None
    cid = chain.get("id") if chain else None
    if not isinstance(cid, str) or rec.turn is None:
        return
    if rec.meta is not None and rec.meta.chain_end is not None:
        state.chains_ended.add(cid)
        state.chains_open.pop(cid, None)
    elif cid not in state.chains_ended:
        tail = rec.input_ids[-CHAIN_PROMPT_TAIL:]
        state.chains_open.setdefault(cid, {})[rec.turn] = (tail, rec.output_ids)
