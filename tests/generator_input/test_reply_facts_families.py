"""`meta.reply` of a record, for every model family (generator/prompts/replies/facts.py): the
reply a family's model writes after its example job's prompt, encoded to output ids, is counted
as reasoning and as a tool call as that family's parser reads it — a Llama-3.1 JSON call too,
which carries no marker token — and a family the parsers do not know falls back to the marker
rule (docs/quality.md). Replies as in test_chains_families."""

from __future__ import annotations

import pytest

from draftgen.generator.prompts.inputs import open_tokenizer
from draftgen.generator.prompts.replies.facts import reply_reader
from draftgen.generator.prompts.samples import Sample
from draftgen.generator.records import generation_record
from draftgen.generator.sglang.client import Generation
from tests.generator.gen_helpers import samples_of, write_jsonl

from .family_cases import example_job, rows
from .test_chains_families import (
    DEEPSEEK_R1,
    DEEPSEEK_V31,
    DEEPSEEK_V31_TOOLS,
    GPT_OSS,
    KIMI,
    LLAMA,
    QWEN3,
)
from .tokenizer_fixture import build_tokenizer

ANSWER, CALL = 0, 1
# (family, example job, the reply, whether it reasons, whether it calls a tool)
CASES = [
    pytest.param("kimi-k2.5", "kimi-k2.5.yaml", KIMI[ANSWER], True, False, id="kimi-answer"),
    pytest.param("kimi-k2.5", "kimi-k2.5.yaml", KIMI[CALL], True, True, id="kimi-call"),
    pytest.param("qwen3", "qwen3.yaml", QWEN3[ANSWER], True, False, id="qwen3-answer"),
    pytest.param("qwen3", "qwen3.yaml", QWEN3[CALL], True, True, id="qwen3-call"),
    pytest.param("deepseek-v3.1", "deepseek-v3.1.yaml", DEEPSEEK_V31[ANSWER], True, False,
                 id="deepseek-v3.1-thinking"),
    pytest.param("deepseek-v3.1", "deepseek-v3.1-tools.yaml", DEEPSEEK_V31_TOOLS[ANSWER], False,
                 False, id="deepseek-v3.1-answer"),
    pytest.param("deepseek-v3.1", "deepseek-v3.1-tools.yaml", DEEPSEEK_V31_TOOLS[CALL], False,
                 True, id="deepseek-v3.1-call"),
    pytest.param("deepseek-r1-0528", "deepseek-r1.yaml", DEEPSEEK_R1[ANSWER], True, False,
                 id="deepseek-r1"),
    pytest.param("gpt-oss", "gpt-oss.yaml", GPT_OSS[ANSWER], True, False, id="gpt-oss-answer"),
    pytest.param("gpt-oss", "gpt-oss.yaml", GPT_OSS[CALL], True, True, id="gpt-oss-call"),
    pytest.param("llama-3.1", "llama-3.1.yaml", LLAMA[ANSWER], False, False, id="llama-answer"),
    # Llama's calls to the user's tools are JSON, no special token: the marker rule missed them.
    pytest.param("llama-3.1", "llama-3.1.yaml", LLAMA[CALL], False, True, id="llama-json-call"),
    # JSON without a `name` is an answer written in JSON, not a call (SGLang's llama3 parser).
    pytest.param("llama-3.1", "llama-3.1.yaml", '{"answer": 4}<|eot_id|>', False, False,
                 id="llama-json-answer"),
]  # fmt: skip


def _record_reply(tokenizer, sample: Sample, reply: str) -> dict | None:
    """`meta.reply` of the record the generator writes for `reply` after `sample`'s prompt."""
    ids = tokenizer.encode(reply, add_special_tokens=False)
    result = Generation(ids, "stop", None, len(sample.input_ids), 0, 0.0)
    record = generation_record(
        "ds", sample, result, {}, "http://s", 1, 0.1, reply_reader(tokenizer)
    )
    assert record.meta is not None
    return record.meta.reply


@pytest.mark.parametrize(("family", "example", "reply", "reasons", "calls"), CASES)
def test_a_reply_is_counted_as_its_familys_parser_reads_it(
    request, tmp_path, family, example, reply, reasons, calls
):
    if family == "kimi-k2.5":
        tokenizer_dir = request.getfixturevalue("tiny_kimi")
    else:
        tokenizer_dir = request.getfixturevalue("family_tokenizer_dir")(family)
    write_jsonl(tmp_path / "rows.jsonl", [rows("{}")["plain"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = example_job(example, tokenizer_dir, [ds])
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        [sample] = samples_of(job, ctx, tmp_path)
        assert isinstance(sample, Sample)
        assert _record_reply(ctx.tokenizer, sample, reply) == {
            "reasoning": reasons,
            "tool_call": calls,
        }


def test_an_unknown_family_is_read_by_the_marker_rule(tmp_path):
    """A template and vocabulary of no known family: no parser, the single-id markers count."""
    from transformers import AutoTokenizer

    specials = {"<think>": 1000, "</think>": 1001, "<tool_call>": 1002, "<|im_end|>": 1003}
    plain = "{%- for m in messages -%}{{ m.content }}{%- endfor -%}"
    tokenizer = AutoTokenizer.from_pretrained(build_tokenizer(tmp_path, plain, specials))
    reader = reply_reader(tokenizer)
    assert reader is not None and reader.parser is None
    prompt = tokenizer.encode("Hi <think>", add_special_tokens=False)
    sample = Sample("ds/r0/0", "ds", 0, 0, prompt)
    assert _record_reply(tokenizer, sample, "plan</think><tool_call>{}") == {
        "reasoning": True,
        "tool_call": True,
    }
    assert _record_reply(tokenizer, sample, "") == {"reasoning": False, "tool_call": False}
