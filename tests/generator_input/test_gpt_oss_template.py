"""What gpt-oss's published chat template does, through its fixture (draftgen.testing.families)
and the example job (docs/models.md): the call header as docs/models.md gives it, parallel calls
recorded as rejects, and `Current date:` pinned per job so a resume renders as it started."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.generator.prompts.template_clock import job_date
from draftgen.output.manifest import JobManifest
from tests.generator.gen_helpers import WEATHER_TOOL, write_jsonl

from .family_cases import REPO, STRING_ARGS, call, example_job, rows, run


def _doc_forms() -> tuple[str, str]:
    """The call and result forms in docs/models.md's gpt-oss row, as plain text."""
    doc = (REPO / "docs" / "models.md").read_text()
    row = next(line for line in doc.splitlines() if line.startswith("| gpt-oss (harmony)"))
    call_form = re.search(r"a call in the prompt is `([^`]+)`", row).group(1)
    result = re.search(r"a result is `([^`]+)`", row).group(1)
    return call_form.replace("\\|", "|"), result.replace("\\|", "|")


def test_the_documented_call_header_is_what_the_template_writes(family_rendered):
    _, tok, _, items = family_rendered["gpt-oss.yaml"]
    [answer] = [
        s for s in items if isinstance(s, Sample) and s.id.split("/")[1:] == ["results", "1"]
    ]
    text = tok.decode(answer.input_ids)
    call_form, result = _doc_forms()
    assert call_form.replace("NAME", "get_weather").replace("ARGS", STRING_ARGS) in text
    assert result.replace("NAME", "get_weather").replace("…", '{"temp_c": 21}') in text
    assert "<|constrain|>" not in text


def _parallel_row() -> dict:
    second = {**call(json.dumps({"city": "Rome"})), "id": "call_2"}
    return {
        "id": "parallel",
        "tools": [WEATHER_TOOL],
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": "", "tool_calls": [call(STRING_ARGS), second]},
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'},
            {"role": "tool", "tool_call_id": "call_2", "content": '{"temp_c": 25}'},
            {"role": "assistant", "content": "21 °C and 25 °C."},
        ],
    }


@pytest.mark.parametrize(("family", "example", "rejected"), [
    ("gpt-oss", "gpt-oss.yaml", True),
    ("qwen3", "qwen3.yaml", False),  # renders every call: nothing to refuse
])  # fmt: skip
def test_prompts_after_parallel_calls_are_rejects_where_the_template_drops_them(
    family_tokenizer_dir, tmp_path, family, example, rejected
):
    write_jsonl(tmp_path / "rows.jsonl", [_parallel_row()])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "turns": "all"}
    items = run(example_job(example, family_tokenizer_dir(family), [ds]), tmp_path)
    by_turn = {i.id.rsplit("/", 1)[1]: i for i in items}
    assert isinstance(by_turn["0"], Sample)  # the turn before the calls is generated
    later = by_turn["1"]
    if rejected:
        assert isinstance(later, Reject) and later.reason == "parallel_tool_calls"
        assert "renders only the first" in later.detail
    else:
        assert isinstance(later, Sample)


def _first_prompt(job, base: Path, day: str) -> tuple[list[int], str]:
    with open_tokenizer(job, base, workers=0, template_date=day) as ctx:
        [sample] = iter_samples(job, job.spec.datasets[0], base_dir=base, tokenizer_ctx=ctx)
        return sample.input_ids, ctx.renderer.decode(sample.input_ids)


def test_a_resumed_job_renders_the_date_it_started_with(family_tokenizer_dir, tmp_path):
    """Day 1 starts the job (no manifest yet: the clock's day, recorded in the job manifest);
    day 2 resumes it: the date comes from the manifest and every id is the same."""
    from datetime import date

    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["plain"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = example_job("gpt-oss.yaml", family_tokenizer_dir("gpt-oss"), [ds])
    out = tmp_path / "out"

    day1 = job_date(job, out, today=lambda: date(2026, 3, 1))
    ids1, text1 = _first_prompt(job, tmp_path, day1)
    assert "Current date: 2026-03-01\n" in text1
    out.mkdir()
    manifest = JobManifest("j", "m", {}, 0, 0, 0.0, None, "", False, template_date=day1)
    (out / "manifest.json").write_text(json.dumps(manifest.to_json()))

    day2 = job_date(job, out, today=lambda: date(2026, 3, 2))
    ids2, _ = _first_prompt(job, tmp_path, day2)
    assert day2 == "2026-03-01" and ids2 == ids1
    other, text = _first_prompt(job, tmp_path, "2026-03-02")  # the date does reach the prompt
    assert other != ids1 and "Current date: 2026-03-02\n" in text


def test_the_spec_date_wins_and_is_part_of_the_fingerprint(family_tokenizer_dir, tmp_path):
    from draftgen.output.fingerprint import dataset_fingerprint

    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    tok = family_tokenizer_dir("gpt-oss")
    pinned = example_job("gpt-oss.yaml", tok, [ds], templateDate="2025-12-24")
    assert job_date(pinned, tmp_path) == "2025-12-24"
    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["plain"]])
    [sample] = run(pinned, tmp_path)
    text = AutoTokenizer.from_pretrained(tok).decode(sample.input_ids)
    assert "Current date: 2025-12-24\n" in text
    fp = dataset_fingerprint(pinned, pinned.spec.datasets[0])
    assert fp["spec.model.templateDate"] == "2025-12-24"
    unpinned = example_job("gpt-oss.yaml", tok, [ds])
    assert "spec.model.templateDate" not in dataset_fingerprint(unpinned, unpinned.spec.datasets[0])


def test_a_date_that_is_not_one_is_refused_naming_the_field(family_tokenizer_dir):
    from draftgen.spec.load import SpecError

    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    with pytest.raises(SpecError, match=r"spec\.model\.templateDate: .* is not a date"):
        example_job(
            "gpt-oss.yaml", family_tokenizer_dir("gpt-oss"), [ds], templateDate="2025-02-30"
        )


def test_the_pin_survives_transformers_recompiling_the_template(family_tokenizer_dir, tmp_path):
    """transformers' cache of compiled templates is bounded: a template compiled again (here:
    the cache cleared between two renders of one renderer) still gets the pinned date."""
    from transformers.utils.chat_template_utils import _compile_jinja_template

    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = example_job("gpt-oss.yaml", family_tokenizer_dir("gpt-oss"), [ds])
    messages = rows(STRING_ARGS)["plain"]["messages"]
    with open_tokenizer(job, tmp_path, workers=0, template_date="2024-02-29") as ctx:
        first = ctx.renderer.text(messages, None)
        _compile_jinja_template.cache_clear()
        assert ctx.renderer.text(messages, None) == first
    assert "Current date: 2024-02-29\n" in first
