"""Chains (`history: regenerated`) in an id export: a chain whose turns continue one another
token for token goes out as one sample with loss on every turn; any other chain one sample per
turn, as `turns: all`.

A chain's next prompt is the template's rendering of the parsed reply (docs/input-formats.md),
which need not repeat the ids the target generated (reasoning dropped, arguments re-serialized,
the reply re-tokenized). Only where turn k+1's prompt starts with turn k's prompt and output ids,
exactly, is the last turn's sequence the whole conversation as the target produced it: then the
earlier turns' output ids are supervised inside it (`ChainRecord.supervised`) and nothing the
target did not generate in that very context carries loss."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from itertools import pairwise

from draftgen.output.record import Record


@dataclass(slots=True)
class ChainRecord(Record):
    """A chain's last record standing for the whole chain."""

    supervised: tuple[tuple[int, int], ...] = ()
    """Spans `[start, end)` of `input_ids` that are earlier turns' output ids (loss 1)."""
    turns: int = 1


def continuation_spans(turns: list[Record]) -> tuple[tuple[int, int], ...] | None:
    """The spans of the last turn's prompt holding each earlier turn's output ids, when every
    turn's prompt starts with the previous turn's prompt and output exactly; else None."""
    for before, after in pairwise(turns):
        sequence = [*before.input_ids, *before.output_ids]
        if after.input_ids[: len(sequence)] != sequence:
            return None
    return tuple((len(r.input_ids), len(r.input_ids) + len(r.output_ids)) for r in turns[:-1])


def _chain_of(record: Record) -> str | None:
    chain = record.meta.chain if record.meta is not None else None
    cid = chain.get("id") if isinstance(chain, dict) else None
    return cid if isinstance(cid, str) else None


def merge_chains(records: Iterable[Record]) -> Iterator[Record]:
    """`records` (one dataset's, in shard order), each ended chain whose turns continue one
    another as one `ChainRecord` in place of its turns (at its last turn's place); chains cut
    short (no `chain_end`) and every other record as they are. Holds only the chains not yet
    ended in memory."""
    going: dict[str, list[Record]] = {}
    for record in records:
        cid = _chain_of(record)
        if cid is None:
            yield record
            continue
        turns = going.setdefault(cid, [])
        turns.append(record)
        if record.meta is None or record.meta.chain_end is None:
            continue
        del going[cid]
        turns.sort(key=lambda r: r.turn or 0)
        spans = (
            continuation_spans(turns)
            if [r.turn for r in turns] == list(range(len(turns))) and len(turns) > 1
            else None
        )
        if spans is None:
            yield from turns
            continue
        last = turns[-1]
        values = {f.name: getattr(last, f.name) for f in fields(Record)}
        yield ChainRecord(**values, supervised=spans, turns=len(turns))
    for turns in going.values():
        yield from turns
