"""The export's data-quality report (the card's section and export-summary.json) and
`--skip-degenerate`: replies flagged as caught in a loop are kept by default, left out on
request, and counted either way."""

from __future__ import annotations

import json

from draftgen.cli import main

from .builders import synthetic_records, write_output


def _records() -> list[dict]:
    records = synthetic_records("chat", 8, truncated_every=4)  # rows 3 and 7 end at the limit
    records[1]["meta"]["degenerate"] = {"ngram": 8, "window": 512, "repeated_share": 0.97}
    records[2]["meta"]["reply"] = {"reasoning": True, "tool_call": True}
    records[4]["meta"]["reply"] = {"reasoning": False, "tool_call": False}
    return records


def _export(root, out, *extra):
    argv = ["export", str(root), "--format", "specforge", "--out", str(out), *extra]
    assert main(argv) == 0
    ids = [json.loads(x)["id"] for x in (out / "train.jsonl").read_text().splitlines()]
    return ids, json.loads((out / "export-summary.json").read_text())["datasets"]["chat"]


def test_loops_are_kept_by_default_and_left_out_on_request(tmp_path, capsys):
    records = _records()
    root = write_output(tmp_path / "run", {"chat": records})
    kept, summary = _export(root, tmp_path / "all", "--include-truncated")
    assert records[1]["id"] in kept and len(kept) == 8 and summary["degenerate_dropped"] == 0
    left, summary = _export(root, tmp_path / "clean", "--include-truncated", "--skip-degenerate")
    assert records[1]["id"] not in left and len(left) == 7
    assert summary["degenerate_dropped"] == 1
    q = summary["quality"]
    assert q["finish_reasons"] == {"stop": 6, "length": 2, "abort": 0}
    assert q["truncation_rate"] == 0.25 and q["degenerate"] == 1
    assert q["replies_checked"] == 2 and q["thinking_share"] == 0.5
    card = (tmp_path / "clean" / "README.md").read_text()
    assert "## Data quality" in card
    assert "| chat | 6 / 2 / 0 | 25.0% | 50.0% | 50.0% |" in card
    assert "| 1 / 0 / 1 |" in card and "left out (`--skip-degenerate`)" in card


def test_a_truncated_loop_is_counted_once_as_truncated(tmp_path, capsys):
    records = _records()
    records[3]["meta"]["degenerate"] = {"ngram": 8, "window": 512, "repeated_share": 0.9}
    root = write_output(tmp_path / "run", {"chat": records})
    ids, summary = _export(root, tmp_path / "x", "--skip-degenerate")
    assert records[3]["id"] not in ids and records[1]["id"] not in ids
    assert summary["truncated_dropped"] == 2 and summary["degenerate_dropped"] == 1
