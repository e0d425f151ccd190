"""Ledger, writer and resume with plain records: the records are the truth."""

from __future__ import annotations

import errno
import json
import os

import pytest

from draftgen.output.ledger import Ledger
from draftgen.output.record import Meta, Record
from draftgen.output.record import Reject as RejectLine
from draftgen.output.resume import scan_dataset
from draftgen.output.writer import (
    AppendFile,
    DatasetWriter,
    DiskFull,
    atomic_write_json,
    encode_line,
)
from draftgen.spec import Budget


def _record(i: int, completion: int = 10, finish: str = "stop") -> Record:
    return Record(
        id=f"ds/r{i}/0",
        dataset="ds",
        source_index=i,
        turn=0,
        input_ids=[163587, 1, 2, 163606],
        output_ids=[163607 + 1] * completion,
        prompt_tokens=4,
        completion_tokens=completion,
        finish_reason=finish,
        matched_stop=163586,
        meta=Meta(None, None, None, None, None, None),
    )


def _reject(index: int, rid: str | None, reason: str) -> RejectLine:
    return RejectLine("ds", index, rid, reason, "", None)


def test_ledger_budgets_overshoot_and_truncation():
    led = Ledger("ds", Budget(completion_tokens=100, max_samples=10))
    for _ in range(4):
        led.add(5, 20, "stop")
    assert led.limit_met() is None and led.remaining_completion_tokens == 20
    led.add(5, 30, "length")
    assert led.limit_met() == "completionTokens" and led.done
    assert led.overshoot_completion_tokens == 10 and led.overshoot_percent == 10.0
    assert led.truncation_rate == pytest.approx(0.2)
    m = led.manifest().to_json()
    assert m["finish_reasons"] == {"stop": 4, "length": 1, "abort": 0}
    assert m["budget"] == {"completionTokens": 100, "totalTokens": None, "maxSamples": 10}


def test_total_and_sample_limits():
    led = Ledger("ds", Budget(total_tokens=50))
    led.add(30, 25, "stop")
    assert led.limit_met() == "totalTokens"
    led = Ledger("ds", Budget(max_samples=2))
    led.add(1, 1, "stop")
    led.add(1, 1, "stop")
    assert led.limit_met() == "maxSamples"
    assert Ledger("ds", Budget()).limit_met() is None


def test_large_token_ids_round_trip_as_plain_integers(tmp_path):
    w = DatasetWriter(tmp_path / "ds", shard_max_records=10)
    rec = _record(0)
    w.write_record(rec)
    w.close()
    line = (tmp_path / "ds" / "shard-00000.jsonl").read_text()
    assert "163608" in line and json.loads(line)["output_ids"][0] == 163608


def test_shards_rotate_and_resume_appends_to_the_last_one(tmp_path):
    d = tmp_path / "ds"
    w = DatasetWriter(d, shard_max_records=3)
    for i in range(7):
        w.write_record(_record(i))
    w.close()
    assert sorted(p.name for p in d.glob("shard-*")) == [
        "shard-00000.jsonl",
        "shard-00001.jsonl",
        "shard-00002.jsonl",
    ]
    st = scan_dataset(d, "ds", Budget(), shard_max_records=3)
    assert (st.next_shard, st.records_in_shard) == (2, 1)
    assert st.ledger.samples == 7 and st.ledger.completion_tokens == 70
    w = DatasetWriter(
        d, shard_max_records=3, next_shard=st.next_shard, records_in_shard=st.records_in_shard
    )
    for i in range(7, 10):
        w.write_record(_record(i))
    w.close()
    counts = {p.name: len(p.read_text().splitlines()) for p in d.glob("shard-*")}
    assert counts == {
        "shard-00000.jsonl": 3,
        "shard-00001.jsonl": 3,
        "shard-00002.jsonl": 3,
        "shard-00003.jsonl": 1,
    }


def test_torn_last_line_is_dropped_and_the_file_truncated(tmp_path):
    d = tmp_path / "ds"
    d.mkdir()
    whole = b"".join(encode_line(_record(i).to_json()) for i in range(3))
    torn = encode_line(_record(3).to_json())[:-25]
    (d / "shard-00000.jsonl").write_bytes(whole + torn)
    st = scan_dataset(d, "ds", Budget(), shard_max_records=100)
    assert st.done_ids == {"ds/r0/0", "ds/r1/0", "ds/r2/0"}
    assert st.ledger.samples == 3 and st.torn_bytes == len(torn)
    assert (d / "shard-00000.jsonl").read_bytes() == whole
    # A whole last line (newline and all) that is not JSON is damage, not a torn write: it is
    # skipped and counted, and left in place for a person to see; the writer appends after it.
    damaged = whole + b'{"id": "ds/r9/0", "output_ids": [1, 2\n'
    (d / "shard-00000.jsonl").write_bytes(damaged)
    st = scan_dataset(d, "ds", Budget(), shard_max_records=100)
    assert st.ledger.samples == 3 and st.corrupt_lines == 1 and st.torn_bytes == 0
    assert (d / "shard-00000.jsonl").read_bytes() == damaged


def test_records_win_over_a_stale_manifest_and_duplicates_count_once(tmp_path):
    d = tmp_path / "ds"
    w = DatasetWriter(d, shard_max_records=100)
    for i in (0, 1, 1):
        w.write_record(_record(i, completion=7))
    stale = Ledger("ds", Budget()).manifest()
    stale.samples, stale.completion_tokens = 1000, 10**9
    w.write_manifest(stale)
    w.close()
    st = scan_dataset(d, "ds", Budget(), shard_max_records=100)
    assert st.ledger.samples == 2 and st.ledger.completion_tokens == 14 and st.duplicates == 1


def test_rejects_are_remembered_except_failed_requests(tmp_path):
    d = tmp_path / "ds"
    w = DatasetWriter(d, shard_max_records=100)
    w.write_reject(_reject(3, None, "malformed_json"))
    w.write_reject(_reject(4, "ds/x/0", "request_failed"))
    w.close()
    st = scan_dataset(d, "ds", Budget(), shard_max_records=100)
    assert st.rejected == {(None, 3, "malformed_json")}
    assert dict(st.ledger.rejects) == {"malformed_json": 1}


def test_atomic_manifest_never_leaves_a_partial_file(tmp_path):
    path = tmp_path / "manifest.json"
    atomic_write_json(path, {"a": 1})
    atomic_write_json(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_disk_full_leaves_no_half_line(tmp_path, monkeypatch):
    f = AppendFile(tmp_path / "shard-00000.jsonl", fsync_every=1)
    f.append(encode_line(_record(0).to_json()))
    size = (tmp_path / "shard-00000.jsonl").stat().st_size
    real_write = os.write
    calls = {"n": 0}

    def half_then_full(fd, data):
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(DiskFull, match="free space"):
        f.append(encode_line(_record(1).to_json()))
    monkeypatch.undo()
    f.close()
    assert (tmp_path / "shard-00000.jsonl").stat().st_size == size
