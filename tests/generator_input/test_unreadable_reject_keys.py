"""Rejects of unreadable rows are keyed by their content: a row inserted at the top of a source
between runs does not make the same bad rows new rejects on resume (rejects.jsonl stays at one
line per bad row)."""

from __future__ import annotations

from draftgen.generator.prompts.inputs import _plan
from draftgen.generator.records import reject_key
from draftgen.spec.datasets import DatasetSpec

BAD = [b"{not json\n", b'{"messages": [\n', b"\xff\xfe garbage\n", b"{not json\n"]


def _keys(tmp_path, lines):
    (tmp_path / "d.jsonl").write_bytes(b"".join(lines))
    ds = DatasetSpec(name="d", source="d.jsonl", format="messages")
    items = list(_plan(ds, tmp_path, None, (), None))  # unreadable rows need no tokenizer
    return [reject_key(r) for r in items]


def test_a_row_inserted_above_keeps_the_bad_rows_keys(tmp_path):
    before = _keys(tmp_path, BAD)
    after = _keys(tmp_path, [b"{also not json\n", *BAD])
    assert len(set(before)) == 4  # the repeated bad line is two rejects, as it is two rows
    assert set(before) <= set(after) and len(set(after)) == 5
