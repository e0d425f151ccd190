"""The typed record: the line it writes is the on-disk format (field order included), a record
read back writes the same line, an optional field is left out until set, and reading names the
field that makes a line no record."""

from __future__ import annotations

import json

import pytest

from draftgen.output.record import BadRecord, Record, Reject
from draftgen.output.writer import encode_line

from .helpers import record

ORDER = [
    "id",
    "dataset",
    "source_index",
    "turn",
    "input_ids",
    "output_ids",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
    "matched_stop",
    "meta",
]


def test_a_record_line_keeps_the_field_order_and_reads_back_to_the_same_line():
    rec = record(1)
    line = encode_line(rec.to_json())
    data = json.loads(line)
    assert list(data) == ORDER
    assert list(data["meta"]) == [
        "sampling",
        "cached_tokens",
        "e2e_latency",
        "server",
        "attempts",
        "created_at",
    ]
    assert encode_line(Record.from_json(data).to_json()) == line


def test_an_optional_field_is_written_only_when_set():
    rec = record(1)
    assert "sample" not in rec.to_json()["meta"]
    assert rec.meta is not None
    rec.meta.sample = {"tool_fallback": "declared as json"}
    assert rec.to_json()["meta"]["sample"] == {"tool_fallback": "declared as json"}
    assert rec.tool_fallback


def test_unknown_meta_keys_survive_a_read_and_write():
    data = record(1).to_json()
    data["meta"]["from_a_newer_draftgen"] = 1
    assert Record.from_json(data).to_json() == data


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d.pop("finish_reason"), "lacks finish_reason"),
        (lambda d: d.update(output_ids=[1, 2**70]), "output_ids is not a list of token ids"),
        (lambda d: d.update(id=7), "id is not a string"),
        (lambda d: d.update(turn=-1), "turn is not a non-negative"),
    ],
)
def test_reading_names_what_makes_a_line_no_record(change, named):
    data = record(1).to_json()
    change(data)
    with pytest.raises(BadRecord, match=named):
        Record.from_json(data)


def test_counting_needs_only_the_id_and_the_lengths():
    got = Record.from_json(
        {"id": "d/x/0", "prompt_tokens": 3, "completion_tokens": 7}, strict=False
    )
    assert (got.completion_tokens, got.finish_reason, got.output_ids) == (7, "stop", [])


def test_a_reject_is_keyed_by_its_sample_id_else_by_its_row():
    assert Reject("d", 3, "d/x/0", "prompt_too_long", "", None).key == ("d/x/0", "prompt_too_long")
    assert Reject("d", 3, None, "malformed_json", "", None).key == (None, 3, "malformed_json")
