"""One torn-last-line rule (draftgen/output/lines.py) read alike by resume, `draftgen stats` and
`draftgen export`: a last line without its newline is a write cut short, never counted, cut off by
resume so the writer appends after it; a whole damaged line elsewhere is a report, not a crash."""

from __future__ import annotations

import pytest

from draftgen.export.records import ExportError, ReadStats, iter_records
from draftgen.output.resume import scan_dataset
from draftgen.output.stats_read import collect
from draftgen.output.writer import DatasetWriter
from draftgen.spec import Budget

from .helpers import line, record, write_output


@pytest.mark.parametrize("cut", [25, 1], ids=["mid-line", "only-the-newline"])
def test_a_torn_last_line_is_not_counted_by_any_reader(tmp_path, cut):
    root = write_output(tmp_path, 3)
    shard = root / "chat" / "shard-00000.jsonl"
    whole = shard.read_bytes()
    # Cut 1 byte: the JSON is complete and parses, only its newline is missing. Still torn.
    shard.write_bytes(whole + line(3)[:-cut])

    stats, _ = collect(root)
    assert stats[0].samples == 3 and stats[0].torn_shards == ["shard-00000.jsonl"]

    read = ReadStats()
    assert [r.id for r in iter_records(root / "chat", read)] == [f"chat/r{i}/0" for i in range(3)]
    assert read.torn_lines == [f"{shard}:4"]

    state = scan_dataset(root / "chat", "chat", Budget(), shard_max_records=100)
    assert state.ledger.samples == 3 and state.torn_bytes == len(line(3)) - cut
    assert shard.read_bytes() == whole  # cut off: the sample is generated again


def test_the_writer_appends_after_a_repaired_shard(tmp_path):
    root = write_output(tmp_path, 3)
    shard = root / "chat" / "shard-00000.jsonl"
    shard.write_bytes(shard.read_bytes() + line(3)[:-10])
    state = scan_dataset(root / "chat", "chat", Budget(), shard_max_records=100)
    writer = DatasetWriter(
        root / "chat",
        shard_max_records=100,
        next_shard=state.next_shard,
        records_in_shard=state.records_in_shard,
    )
    writer.write_record(record(3))
    writer.close()
    again = scan_dataset(root / "chat", "chat", Budget(), shard_max_records=100)
    assert again.ledger.samples == 4 and again.corrupt_lines == 0 and again.torn_bytes == 0
    assert [r.id for r in iter_records(root / "chat")][-1] == "chat/r3/0"


@pytest.mark.parametrize("where", ["middle", "last"])
def test_a_whole_damaged_line_is_reported_by_each_reader(tmp_path, where):
    root = write_output(tmp_path, 3)
    shard = root / "chat" / "shard-00000.jsonl"
    lines = shard.read_bytes().splitlines(keepends=True)
    lines.insert(1 if where == "middle" else 3, b'{"id": "chat/x/0", "output_ids": [1,\n')
    shard.write_bytes(b"".join(lines))
    number = 2 if where == "middle" else 4

    state = scan_dataset(root / "chat", "chat", Budget(), shard_max_records=100)
    assert state.ledger.samples == 3 and state.corrupt_lines == 1 and state.torn_bytes == 0
    assert shard.read_bytes() == b"".join(lines)  # damage stays for a person to see

    stats, _ = collect(root)
    assert stats[0].samples == 3 and stats[0].unreadable == 1 and stats[0].torn_shards == []

    with pytest.raises(ExportError, match=f"shard-00000.jsonl:{number}: "):
        list(iter_records(root / "chat"))


def test_a_torn_rejects_line_is_cut_off_by_resume(tmp_path):
    root = write_output(tmp_path, 1)
    rejects = root / "chat" / "rejects.jsonl"
    good = b'{"dataset":"chat","source_index":7,"id":null,"reason":"malformed_json"}\n'
    rejects.write_bytes(good + good[:-20])
    state = scan_dataset(root / "chat", "chat", Budget(), shard_max_records=100)
    assert dict(state.ledger.rejects) == {"malformed_json": 1}
    assert rejects.read_bytes() == good
