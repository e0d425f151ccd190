"""The export card names the model, never the local path it was read from."""

from __future__ import annotations

from draftgen.cli import main

from .builders import synthetic_records, write_output


def test_the_card_names_the_model_not_its_local_path(tmp_path):
    model = "/home/alice/private/models/Kimi-K2.5"
    src = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 3)}, model=model)
    out = tmp_path / "out"
    assert main(["export", str(src), "--format", "parquet", "--out", str(out)]) == 0
    card = (out / "README.md").read_text()
    assert "/home/alice" not in card
    assert "**Kimi-K2.5**" in card
