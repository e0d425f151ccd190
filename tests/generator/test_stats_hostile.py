"""`draftgen stats` over damaged lines: a 5,000-digit integer or nesting past the parser in a
shard or in rejects.jsonl is an unreadable line (counted as such), never a traceback."""

from __future__ import annotations

import json

from draftgen.cli import main
from tests.export.builders import synthetic_records, write_output

BAD = ['{"id": "x", "n": ' + "9" * 5000 + "}", "[" * 100_000 + "]" * 100_000]


def test_damaged_lines_are_unreadable_not_a_crash(tmp_path, capsys):
    root = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 4)}, shard_size=10)
    shard = root / "chat" / "shard-00000.jsonl"
    shard.write_text(shard.read_text() + "\n".join(BAD) + "\n")
    (root / "chat" / "rejects.jsonl").write_text("\n".join(BAD) + "\n")
    assert main(["stats", str(root), "--json"]) == 0
    (chat,) = json.loads(capsys.readouterr().out)["datasets"]
    assert chat["samples"] == 4
    assert chat["unreadable_lines"] == 2
    assert chat["rejects"] == 0


def test_a_duplicated_record_is_counted_once(tmp_path, capsys):
    root = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 4)}, shard_size=10)
    shard = root / "chat" / "shard-00000.jsonl"
    first = shard.read_text().splitlines()[0]
    shard.write_text(shard.read_text() + first + "\n")  # the same record twice: 4 distinct
    assert main(["stats", str(root), "--json"]) == 1  # said loudly, as every damaged output
    out, err = capsys.readouterr()
    (chat,) = json.loads(out)["datasets"]
    assert chat["samples"] == 4
    assert "1 records repeat an earlier one's id: counted once" in err
