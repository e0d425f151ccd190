"""`spec.exports`: each export sits on the output volume beside the records, never inside them
nor off the volume."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from draftgen.spec import GenerationJobSpec

BASE = {
    "model": {"weights": "hf://org/model"},
    "datasets": [{"name": "chat", "source": "chat.jsonl", "format": "messages"}],
}


def _spec(output_path: str, *exports: dict) -> GenerationJobSpec:
    return GenerationJobSpec.model_validate(
        {**BASE, "output": {"path": output_path}, "exports": list(exports)}
    )


def test_an_export_beside_the_records_is_accepted() -> None:
    spec = _spec("records", {"format": "parquet", "path": "exports/parquet/"})
    assert spec.exports[0].path == "exports/parquet"
    assert spec.exports[0].options.include_truncated is False
    assert _spec(".").exports == []  # no exports: any output path


@pytest.mark.parametrize(
    ("output_path", "export_path", "words"),
    [
        (".", "exports/p", "output.path"),
        ("records", "records/p", "inside the records"),
        ("runs/kimi", "runs", "holds the records"),
        ("records", "/abs/p", "relative"),
        ("records", "../p", "relative"),
        ("records", ".", "relative"),
    ],
)
def test_an_export_off_the_volume_or_among_the_records_is_refused(
    output_path: str, export_path: str, words: str
) -> None:
    with pytest.raises(ValidationError, match=words):
        _spec(output_path, {"format": "parquet", "path": export_path})


def test_two_exports_to_one_path_and_a_bad_mix_are_refused() -> None:
    with pytest.raises(ValidationError, match="used twice"):
        _spec("r", {"format": "parquet", "path": "e"}, {"format": "speculators", "path": "e"})
    with pytest.raises(ValidationError, match="NAME=WEIGHT"):
        _spec("r", {"format": "parquet", "path": "e", "options": {"mix": ["chat"]}})
