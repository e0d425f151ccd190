"""`--format specforge` (the pre-tokenized rows of SpecForge's `data.prompts_path`) and the
explicit, warned `--format specforge-conversations`, without a trainer installed: shapes, the
CLI's messages and the YAML keys. tests/export/test_trainer_loaders.py runs the trainers' own
loaders over the same files."""

from __future__ import annotations

import json
from pathlib import Path

from draftgen.cli import main

from .builders import synthetic_records, write_output


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_specforge_rows_are_the_ids_and_mask_without_a_tokenizer(tmp_path, capsys):
    records = synthetic_records("chat", 6)
    # No model in the manifest and no --tokenizer: the ids format needs none.
    root = write_output(tmp_path / "run", {"chat": records}, model=None)
    out = tmp_path / "sf"
    assert main(["export", str(root), "--format", "specforge", "--out", str(out)]) == 0
    rows = _rows(out / "train.jsonl")
    assert [set(r) for r in rows] == [{"id", "input_ids", "loss_mask"}] * len(records)
    for row, rec in zip(rows, records):
        assert row["id"] == rec["id"]
        assert row["input_ids"] == rec["input_ids"] + rec["output_ids"]
        assert row["loss_mask"] == [0] * len(rec["input_ids"]) + [1] * len(rec["output_ids"])
        assert all(type(i) is int for i in row["input_ids"])
    printed = capsys.readouterr()
    longest = max(len(r["input_ids"]) + len(r["output_ids"]) for r in records)
    assert f"  prompts_path: {out.resolve() / 'train.jsonl'}" in printed.out
    assert f"  max_length: {longest} " in printed.out
    assert "warning" not in printed.err
    card = (out / "README.md").read_text()
    assert "prompts_path:" in card and f"max_length: {longest}" in card
    summary = json.loads((out / "export-summary.json").read_text())
    assert summary["format"] == "specforge" and summary["longest_row_tokens"] == longest


def test_max_length_hint_warns_about_specforges_default(tmp_path, capsys):
    rec = synthetic_records("long", 1)[0]
    rec["input_ids"] = rec["input_ids"] + [7] * 2100
    root = write_output(tmp_path / "run", {"long": [rec]})
    assert main(["export", str(root), "--format", "specforge", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert f"max_length: {len(rec['input_ids']) + len(rec['output_ids'])}" in out
    assert "default 2048 would cut longer rows" in out


def test_specforge_text_goes_with_the_conversation_form(tmp_path, capsys):
    root = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 2)})
    code = main(
        [
            "export",
            str(root),
            "--format",
            "specforge",
            "--out",
            str(tmp_path / "o"),
            "--specforge-text",
        ]
    )
    assert code == 1
    assert "--format specforge-conversations" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_conversation_form_warns_and_prints_the_keys_it_needs(tmp_path, capsys):
    # The warning comes before the tokenizer is needed: a missing model still shows it.
    root = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 2)}, model=None)
    out = tmp_path / "o"
    args = ["export", str(root), "--format", "specforge-conversations", "--out", str(out)]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "warning: --format specforge-conversations writes text" in err
    assert "tokenizes again" in err and "--format specforge writes the ids" in err
