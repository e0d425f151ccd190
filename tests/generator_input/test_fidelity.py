"""Nothing the user wrote is re-serialized (issue 15, items 1–3): tool-call arguments reach the
template as the row's own string, every reasoning key is carried as given, and whether a tool
result is named is the dataset's choice (`toolResultName`). Checked against tiny-kimi-tiktoken,
the remote-code fixture whose template (like Kimi-K2.5's) prints string arguments verbatim,
reads `reasoning` before `reasoning_content` and names a turn by its `name`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from draftgen.generator.prompts.inputs import iter_samples
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.generator.records import generation_record
from draftgen.generator.rows.formats import parse_conversation
from draftgen.generator.rows.glaive import QUOTED_ARGUMENTS
from draftgen.generator.sglang.client import Generation
from draftgen.spec import DatasetSpec
from tests.generator.gen_helpers import WEATHER_TOOL, template_ids, write_jsonl

from .conftest import make_job
from .tokenizer_fixture import build_tokenizer

REPO = Path(__file__).resolve().parents[2]
TIKTOKEN = REPO / ".cache" / "models" / "tiny-kimi-tiktoken"
needs_tiktoken = pytest.mark.skipif(
    not (TIKTOKEN / "tiktoken.model").exists(), reason="tiny-kimi-tiktoken not built: make models"
)

# OpenAI's own way of writing arguments: compact, non-ASCII escaped. Re-dumped by a template's
# `tojson` it would become `{"city": "上海"}`.
SHANGHAI = '{"city":"\\u4e0a\\u6d77"}'


@pytest.fixture
def run_rows(tmp_path, shared_tokenizer):
    """Rows of one dataset (`fmt`, more dataset fields as keywords) through `iter_samples`."""

    def run(rows: list[Any], fmt: str, tokenizer: Path, **dataset: Any) -> list[Sample | Reject]:
        write_jsonl(tmp_path / "data.jsonl", rows)
        job = make_job(
            tokenizer,
            [{"name": "ds", "source": "data.jsonl", "format": fmt, **dataset}],
            trustRemoteCode=True,
        )
        ctx = shared_tokenizer(job, tmp_path)
        return list(iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx))

    return run


@pytest.fixture(scope="module")
def kimi():
    from transformers import AutoTokenizer

    if not (TIKTOKEN / "tiktoken.model").exists():
        pytest.skip("tiny-kimi-tiktoken not built: make models")
    return AutoTokenizer.from_pretrained(str(TIKTOKEN), trust_remote_code=True)


def call_row(arguments: Any, **assistant: Any) -> dict:
    return {
        "messages": [
            {"role": "user", "content": "Weather in Shanghai?"},
            {
                "role": "assistant",
                "content": "",
                **assistant,
                "tool_calls": [
                    {
                        "id": "functions.get_weather:0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": '{"t": 9}'},
            {"role": "user", "content": "And tomorrow?"},
        ],
        "tools": [WEATHER_TOOL],
    }


# ------------------------------------------------------------------------ 1. arguments verbatim


def test_the_arguments_string_is_kept_byte_for_byte_in_the_prompt(kimi, run_rows):
    row = call_row(SHANGHAI)
    [sample] = run_rows([row], "messages", TIKTOKEN)
    assert isinstance(sample, Sample)
    assert sample.input_ids == template_ids(kimi, row["messages"], row["tools"])
    text = kimi.decode(sample.input_ids)
    assert "<|tool_call_argument_begin|>" + SHANGHAI + "<|tool_call_end|>" in text
    assert "上海" not in text


@pytest.mark.parametrize(
    "arguments, detail",
    [("{city: Oslo}", "not valid JSON"), ('"Oslo"', "must be a JSON object"), ("[1]", "object")],
)
def test_arguments_that_are_not_a_json_object_are_rejected_with_the_reason(arguments, detail):
    from draftgen.generator.rows.formats import RowError

    with pytest.raises(RowError) as err:
        parse_conversation("messages", call_row(arguments))
    assert err.value.reason == "bad_tool_call" and detail in err.value.detail


@needs_tiktoken
def test_glaive_quoted_arguments_are_normalized_and_the_record_says_so(kimi, run_rows):
    row = {
        "system": "SYSTEM: You are a helpful assistant with access to the following functions. "
        "Use them if required -\n" + json.dumps(WEATHER_TOOL["function"]),
        "chat": "USER: Weather in Lagos?\n\n\nASSISTANT: <functioncall> "
        '{"name": "get_weather", "arguments": \'{"city":"Lagos"}\'} <|endoftext|>\n\n\n'
        'FUNCTION RESPONSE: {"t": 30}\n\n\nUSER: Thanks. And Abuja?\n',
    }
    [sample] = run_rows([row], "glaive", TIKTOKEN)
    assert isinstance(sample, Sample)
    assert sample.info["normalized"] == [QUOTED_ARGUMENTS]
    assert '<|tool_call_argument_begin|>{"city":"Lagos"}<|tool_call_end|>' in kimi.decode(
        sample.input_ids
    )
    record = generation_record(
        "ds", sample, Generation([1, 2], "stop", None, 0, 0, 0.0), {}, "http://s", 1, 0.1
    )
    assert record.meta is not None and record.meta.sample is not None
    assert record.meta.sample["normalized"] == [QUOTED_ARGUMENTS]
    # arguments written as a JSON object: nothing normalized, nothing recorded
    row["chat"] = row["chat"].replace('\'{"city":"Lagos"}\'', '{"city":"Lagos"}')
    [plain] = run_rows([row], "glaive", TIKTOKEN)
    assert isinstance(plain, Sample) and "normalized" not in plain.info


def test_a_template_that_json_encodes_a_string_gets_the_parsed_object(kimi_like_dir, run_rows):
    """tokenizer_fixture's KIMI_LIKE template writes `arguments | tojson` whatever they are: a
    string would reach the prompt quoted, so the probe passes objects to it (as SGLang's chat
    endpoint does)."""
    from transformers import AutoTokenizer

    row = call_row(SHANGHAI)
    [sample] = run_rows([row], "messages", kimi_like_dir)
    assert isinstance(sample, Sample)
    tok = AutoTokenizer.from_pretrained(kimi_like_dir)
    parsed = json.loads(json.dumps(row["messages"]))
    parsed[1]["tool_calls"][0]["function"]["arguments"] = json.loads(SHANGHAI)
    assert sample.input_ids == template_ids(tok, parsed, row["tools"])
    assert '\\"city\\"' not in tok.decode(sample.input_ids)


# ---------------------------------------------------------------------- 2. reasoning as given


def test_reasoning_and_reasoning_content_reach_a_template_that_reads_reasoning_first(
    kimi, run_rows
):
    row = {
        "messages": [
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4", "reasoning": "two and two"},
            {"role": "user", "content": "3+3?"},
            {"role": "assistant", "content": "6", "reasoning_content": "three and three"},
            {"role": "user", "content": "4+4?"},
            {"role": "assistant", "content": "8", "reasoning": "R", "reasoning_content": "RC"},
            {"role": "user", "content": "5+5?"},
        ]
    }
    [sample] = run_rows([row], "messages", TIKTOKEN)
    assert isinstance(sample, Sample)
    assert sample.input_ids == template_ids(kimi, row["messages"])
    text = kimi.decode(sample.input_ids)
    assert "<think>two and two</think>4" in text
    assert "<think>three and three</think>6" in text
    assert "<think>R</think>8" in text


THINKING_TEMPLATE = (
    "{%- for m in messages -%}"
    "{%- if m.role == 'user' -%}<|im_user|>user<|im_middle|>{{ m.content }}<|im_end|>"
    "{%- else -%}<|im_assistant|>assistant<|im_middle|>"
    "{%- if m.thinking is defined -%}<think>{{ m.thinking }}</think>{%- endif -%}"
    "{{ m.content }}<|im_end|>{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|><think>{%- endif -%}"
)


def test_thinking_reaches_a_template_that_reads_thinking(tmp_path, run_rows):
    tok = build_tokenizer(tmp_path / "thinking-tok", THINKING_TEMPLATE)
    row = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello", "thinking": "greet back"},
            {"role": "user", "content": "bye"},
        ]
    }
    [sample] = run_rows([row], "messages", tok)
    assert isinstance(sample, Sample)
    from transformers import AutoTokenizer

    text = AutoTokenizer.from_pretrained(tok).decode(sample.input_ids)
    assert "<think>greet back</think>hello" in text


def test_every_reasoning_key_is_carried_through_as_given_in_messages_and_sharegpt():
    keys = {"reasoning": "a", "reasoning_content": "b", "thinking": "c"}
    conv = parse_conversation(
        "messages",
        {
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "x", **keys},
            ]
        },
    )
    assert conv.messages[1] == {"role": "assistant", "content": "x", **keys}
    conv = parse_conversation(
        "sharegpt",
        {"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "x", **keys}]},
    )
    assert conv.messages[1] == {"role": "assistant", "content": "x", **keys}
    from draftgen.generator.rows.formats import RowError

    with pytest.raises(RowError, match="reasoning must be a string"):
        parse_conversation(
            "messages",
            {
                "messages": [
                    {"role": "user", "content": "q"},
                    {"role": "assistant", "content": "x", "reasoning": 1},
                ]
            },
        )


# ------------------------------------------------------------------ 3. toolResultName per dataset


GLAIVE_ROW = {
    "system": "SYSTEM: You are helpful. " + json.dumps(WEATHER_TOOL["function"]),
    "chat": "USER: Weather in Lagos?\n\n\nASSISTANT: <functioncall> "
    '{"name": "get_weather", "arguments": {"city": "Lagos"}} <|endoftext|>\n\n\n'
    'FUNCTION RESPONSE: {"t": 30}\n\n\nUSER: Thanks.\n',
}
SHAREGPT_ROW = {
    "tools": [WEATHER_TOOL],
    "conversations": [
        {"from": "human", "value": "Weather in Lagos?"},
        {"from": "function_call", "value": '{"name": "get_weather", "arguments": {"city": "L"}}'},
        {"from": "observation", "value": '{"t": 30}'},
        {"from": "human", "value": "Thanks."},
    ],
}


def test_tool_result_name_defaults_to_none_and_is_in_the_spec():
    ds = DatasetSpec.model_validate({"name": "d", "source": "d.jsonl", "format": "glaive"})
    assert ds.tool_result_name == "none"
    named = DatasetSpec.model_validate(
        {"name": "d", "source": "d.jsonl", "format": "glaive", "toolResultName": "function"}
    )
    assert named.tool_result_name == "function"
    with pytest.raises(ValueError):
        DatasetSpec.model_validate(
            {"name": "d", "source": "d.jsonl", "format": "glaive", "toolResultName": "tool"}
        )


@needs_tiktoken
@pytest.mark.parametrize("fmt, row", [("glaive", GLAIVE_ROW), ("sharegpt", SHAREGPT_ROW)])
@pytest.mark.parametrize(
    "naming, header",
    [
        (None, "<|im_system|>tool<|im_middle|>"),
        ("function", "<|im_system|>get_weather<|im_middle|>"),
    ],
)
def test_tool_result_name_decides_the_tool_turns_header(kimi, fmt, row, naming, header, run_rows):
    extra = {} if naming is None else {"toolResultName": naming}
    [sample] = run_rows([row], fmt, TIKTOKEN, **extra)
    assert isinstance(sample, Sample)
    text = kimi.decode(sample.input_ids)
    assert header + "## Return of functions.get_weather:0" in text
    conv = parse_conversation(fmt, row, tool_result_name=naming or "none")
    [result] = [m for m in conv.messages if m["role"] == "tool"]
    assert ("name" in result) == (naming == "function")


def test_a_messages_tool_turn_keeps_the_name_it_has_or_lacks():
    row = call_row("{}")
    row["messages"][2]["name"] = "get_weather"
    for naming in ("none", "function"):
        conv = parse_conversation("messages", row, tool_result_name=naming)
        assert conv.messages[2]["name"] == "get_weather"
    del row["messages"][2]["name"]
    conv = parse_conversation("messages", row, tool_result_name="function")
    assert "name" not in conv.messages[2]


def test_tool_result_name_is_part_of_the_datasets_fingerprint_only_when_set(kimi_like_dir):
    from draftgen.output.fingerprint import dataset_fingerprint

    def fingerprint(**extra: Any) -> dict:
        job = make_job(
            kimi_like_dir, [{"name": "ds", "source": "d.jsonl", "format": "glaive", **extra}]
        )
        return dataset_fingerprint(job, job.spec.datasets[0])

    default = fingerprint()
    assert not any(k.endswith("toolResultName") for k in default)  # earlier outputs resume
    assert fingerprint(toolResultName="none") == default
    assert fingerprint(toolResultName="function") != default


def test_an_output_of_an_earlier_prompt_rendering_is_not_resumed_silently(kimi_like_dir, tmp_path):
    """Outputs written before arguments were kept verbatim (no `draftgen.promptRendering` in
    their fingerprint) would mix two prompt shapes: refused with the way forward."""
    import json

    from draftgen.output.fingerprint import (
        PROMPT_RENDERING,
        SpecChanged,
        check_fingerprint,
        dataset_fingerprint,
    )

    job = make_job(kimi_like_dir, [{"name": "ds", "source": "d.jsonl", "format": "glaive"}])
    now = dataset_fingerprint(job, job.spec.datasets[0])
    earlier = {k: v for k, v in now.items() if k != "draftgen.promptRendering"}
    (tmp_path / "fingerprint.json").write_text(
        json.dumps({"series": [{"first_shard": 0, "fingerprint": earlier}]})
    )
    with pytest.raises(
        SpecChanged, match=rf"draftgen\.promptRendering changed from null to {PROMPT_RENDERING}"
    ):
        check_fingerprint(tmp_path, now, has_data=True, next_shard=1, allow_change=False)
    series, new_series = check_fingerprint(
        tmp_path, now, has_data=True, next_shard=1, allow_change=True
    )
    assert new_series and series[-1]["changed"] == ["draftgen.promptRendering"]
