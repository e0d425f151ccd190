"""Damaged outputs handed to `draftgen export`: a shard line holding a 5,000-digit integer, a value
nested past the parser or a token id past int64 is refused in one line naming `file:line` (exit 1,
no traceback); garbage in a manifest.json is reported and the export is built from the records."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from draftgen.cli import main

from .builders import synthetic_records, write_output

BIG = "9" * 5000


def _export(src, out) -> int:
    return main(["export", str(src), "--format", "parquet", "--out", str(out)])


def _line(kind: str) -> str:
    good = json.dumps(synthetic_records("chat", 9)[8])
    if kind == "big_int":
        return good[:-1] + ', "n": ' + BIG + "}"
    if kind == "deep":
        return good[:-1] + ', "n": ' + "[" * 5000 + "]" * 5000 + "}"
    if kind == "nested":  # parses, but past the depth anything downstream should walk
        return good[:-1] + ', "n": ' + "[" * 600 + "]" * 600 + "}"
    if kind == "huge_token":
        record = json.loads(good)
        record["output_ids"] = [1, 2**70]
        return json.dumps(record)
    raise AssertionError(kind)


@pytest.mark.parametrize("last", [False, True], ids=["middle", "last"])
@pytest.mark.parametrize("kind", ["big_int", "deep", "nested", "huge_token"])
def test_damaged_shard_line_is_refused_naming_its_place(tmp_path, capsys, kind, last):
    root = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 3)}, shard_size=10)
    shard = root / "chat" / "shard-00000.jsonl"
    lines = shard.read_text().splitlines()
    lines.insert(len(lines) if last else 1, _line(kind))
    shard.write_text("\n".join(lines) + "\n")  # complete lines: damage, not a torn write
    assert _export(root, tmp_path / "out") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert f"shard-00000.jsonl:{len(lines) if last else 2}:" in err[0]
    assert "restore it or remove the line" in err[0]
    assert not (tmp_path / "out").exists()


GARBAGE = {
    "binary": b"\xff\xfe\x00garbage\x80",
    "not_json": b"{this is not json",
    "a_list": b"[1, 2, 3]",
    "big_int": b'{"samples": ' + BIG.encode() + b"}",
    "deep": b"[" * 5000 + b"]" * 5000,
    "wrong_types": json.dumps(
        {
            "job": 7,
            "model": ["x"],
            "budget": {"completionTokens": "lots", "maxSamples": [1]},
            "overshoot_completion_tokens": "many",
            "samples": True,
        }
    ).encode(),
}


@pytest.mark.parametrize("which", ["dataset", "job"])
@pytest.mark.parametrize("garbage", list(GARBAGE))
def test_garbage_manifest_is_rebuilt_from_the_records(tmp_path, capsys, garbage, which):
    records = synthetic_records("chat", 6)
    root = write_output(tmp_path / "run", {"chat": records}, shard_size=4)
    manifest = root / "manifest.json" if which == "job" else root / "chat" / "manifest.json"
    manifest.write_bytes(GARBAGE[garbage])
    out = tmp_path / "out"
    assert _export(root, out) == 0
    ids = sorted(
        r["id"] for p in (out / "data").glob("*.parquet") for r in pq.read_table(p).to_pylist()
    )
    assert ids == sorted(r["id"] for r in records)
    summary = json.loads((out / "export-summary.json").read_text())
    assert summary["datasets"]["chat"]["records"] == 6  # counted from the records
    err = capsys.readouterr().err
    if garbage != "wrong_types":
        assert f"{manifest}: " in err and "built from the records" in err
    assert "Traceback" not in err
