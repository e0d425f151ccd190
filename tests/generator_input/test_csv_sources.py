"""CSV and TSV prompt datasets with a column mapping: read row by row (quoted newlines included),
in either selection mode, the mapped columns becoming the fields the format reads."""

from __future__ import annotations

import pytest

from draftgen.generator.prompts.inputs import _plan
from draftgen.generator.prompts.pretokenize import RenderJob
from draftgen.spec import SpecError, parse_job
from draftgen.spec.datasets import DatasetSpec
from tests.jobs import dataset, job_document

CSV = 'question,instruction\n"What is 2+2?",Be brief.\n"A prompt\nover two lines",Be kind.\n'


def _prompts(tmp_path, name: str, text: str, **fields) -> list[tuple[str, str]]:
    (tmp_path / name).write_text(text)
    ds = DatasetSpec(
        name="p",
        source=name,
        format="prompt",
        columns={"prompt": "question", "system": "instruction"},
        **fields,
    )
    jobs = [j for j in _plan(ds, tmp_path, None, (), None) if isinstance(j, RenderJob)]
    return sorted(
        (m["content"], next(x["content"] for x in j.messages if x["role"] == "system"))
        for j in jobs
        for m in j.messages
        if m["role"] == "user"
    )


@pytest.mark.parametrize("mode", ["sequential", "shuffle"])
def test_a_csv_with_mapped_columns_is_a_prompt_dataset(tmp_path, mode):
    got = _prompts(tmp_path, "q.csv", CSV, selection={"mode": mode, "seed": 3})
    assert got == [("A prompt\nover two lines", "Be kind."), ("What is 2+2?", "Be brief.")]


def test_a_tsv_reads_alike(tmp_path):
    tsv = "question\tinstruction\nWhat is 2+2?\tBe brief.\n"
    assert _prompts(tmp_path, "q.tsv", tsv) == [("What is 2+2?", "Be brief.")]


def test_a_mapping_to_a_field_no_format_reads_is_refused():
    doc = job_document(
        model={"weights": "m"},
        datasets=[dataset("p", "q.csv", "prompt", columns={"promt": "question"})],
    )
    with pytest.raises(SpecError, match="promt: not a field any format reads"):
        parse_job(doc)
