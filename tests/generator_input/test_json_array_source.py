"""A ShareGPT file published as one JSON array is refused at once with the conversion, by
`generate`'s input side and by `validate --local`, instead of a column of malformed_json rejects."""

from __future__ import annotations

import json

import pytest

from draftgen.cli import main
from draftgen.generator.rows.sources import SourceError, list_files
from tests.jobs import dataset, job_document, write_job_yaml

ROWS = [{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]}]


def test_a_json_array_file_is_named_with_the_fix(tmp_path):
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(ROWS, indent=2))
    with pytest.raises(SourceError, match=r"a JSON array, not JSONL .*jq -c '\.\[\]'"):
        list_files(path)
    (tmp_path / "ok.jsonl").write_text(json.dumps(ROWS[0]) + "\n")
    assert list_files(tmp_path / "ok.jsonl") == [tmp_path / "ok.jsonl"]
    with pytest.raises(SourceError, match="a JSON array"):
        list_files(tmp_path)  # inside a directory too


def test_validate_local_names_the_array(tmp_path, tiny_kimi, capsys):
    (tmp_path / "sharegpt.json").write_text(json.dumps(ROWS))
    doc = job_document(
        model={"weights": str(tiny_kimi)},
        sampling={"maxNewTokens": 64},
        datasets=[dataset("sg", "sharegpt.json", "sharegpt")],
    )
    assert main(["validate", "--local", str(write_job_yaml(tmp_path / "job.yaml", doc))]) == 2
    assert "sharegpt.json: a JSON array, not JSONL" in capsys.readouterr().err
