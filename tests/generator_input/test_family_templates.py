"""Each family's own template rules, through its example job and fixture tokenizer
(draftgen.testing.families; docs/models.md): Qwen3's empty think block, DeepSeek's tool results
and refusals, R1's prefix, gpt-oss's ids above 199,000, Llama-3.1's JSON arguments, built-in tools
and `ipython` turns."""

from __future__ import annotations

import copy

import pytest
from transformers import AutoTokenizer

from draftgen.generator.prompts.samples import Sample
from draftgen.testing import families
from tests.generator.gen_helpers import write_jsonl

from .family_cases import STRING_ARGS, example_job, expected_ids, rows, run, tok_ids


def test_qwen3_without_thinking_writes_the_empty_think_block(family_tokenizer_dir, tmp_path):
    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["plain"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = example_job(
        "qwen3.yaml",
        family_tokenizer_dir("qwen3"),
        [ds],
        chatTemplateKwargs={"enable_thinking": False},
        generationPrefix="</think>\n\n",
    )
    [sample] = run(job, tmp_path)
    assert isinstance(sample, Sample)
    think, end = families.qwen3.SPECIALS["<think>"], families.qwen3.SPECIALS["</think>"]
    assert sample.input_ids[-6:-2] == [think, *tok_ids(family_tokenizer_dir("qwen3"), "\n\n"), end]


def test_deepseek_prompt_after_a_tool_result_has_no_generation_prompt(family_rendered):
    job, tok, _, items = family_rendered["deepseek-v3.1-tools.yaml"]
    by_turn = {(s.id.split("/")[1], s.turn): s for s in items if isinstance(s, Sample)}
    sp = families.deepseek.SPECIALS
    assert by_turn[("results", 1)].input_ids[-1] == sp["<｜tool▁output▁end｜>"]
    assert by_turn[("results", 0)].input_ids[-2:] == [sp["<｜Assistant｜>"], sp["</think>"]]
    # BOS once: printed by the template, not added again by encoding
    assert all(s.input_ids.count(sp["<｜begin▁of▁sentence｜>"]) == 1 for s in by_turn.values())


def test_deepseek_thinking_job_refuses_tool_results(family_tokenizer_dir, tmp_path):
    """The thinking job's `<think>` prefix is missing after a tool result: refused at start."""
    from draftgen.generator.prompts.integrity import IntegrityError

    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["results"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "turns": "all"}
    job = example_job("deepseek-v3.1.yaml", family_tokenizer_dir("deepseek-v3.1"), [ds])
    with pytest.raises(IntegrityError, match="generationPrefix"):
        run(job, tmp_path)


def test_deepseek_template_without_tools_is_refused_for_tool_rows(family_tokenizer_dir, tmp_path):
    """The template DeepSeek-V3.1's tokenizer ships declares no tools: refused, not run."""
    from draftgen.generator.prompts.integrity import IntegrityError

    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["tools"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = example_job(
        "deepseek-v3.1-tools.yaml", family_tokenizer_dir("deepseek-v3.1-no-tools"), [ds]
    )
    with pytest.raises(IntegrityError, match="does not contain its tools"):
        run(job, tmp_path)


def test_deepseek_r1_0528_prompts_end_with_the_assistant_token(family_rendered):
    """The R1 example names R1-0528, whose template leaves `<think>` to the model."""
    _, tok, _, items = family_rendered["deepseek-r1.yaml"]
    assistant = families.deepseek.SPECIALS["<｜Assistant｜>"]
    assert all(s.input_ids[-1] == assistant for s in items if isinstance(s, Sample))


def test_the_first_deepseek_r1_takes_the_think_prefix(family_tokenizer_dir, tmp_path):
    """The first R1's template opens the reasoning in the prompt: with the prefix the example's
    comment gives, every prompt ends with `<think>` and a newline."""
    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["plain"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    tok_dir = family_tokenizer_dir("deepseek-r1")
    job = example_job("deepseek-r1.yaml", tok_dir, [ds], generationPrefix="<think>\n")
    [sample] = run(job, tmp_path)
    assert isinstance(sample, Sample)
    tail = [families.deepseek.SPECIALS["<｜Assistant｜>"], families.deepseek.SPECIALS["<think>"]]
    assert sample.input_ids[-3:] == tail + tok_ids(tok_dir, "\n")


def test_the_think_prefix_under_an_r1_0528_template_is_refused_at_start(
    family_tokenizer_dir, tmp_path
):
    """What the example used to say: a `<think>\\n` prefix the template never writes stops the
    job before any server is asked, naming model.generationPrefix."""
    from draftgen.generator.prompts.integrity import IntegrityError

    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["plain"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = example_job(
        "deepseek-r1.yaml",
        family_tokenizer_dir("deepseek-r1-0528"),
        [ds],
        generationPrefix="<think>\n",
    )
    with pytest.raises(IntegrityError, match="generationPrefix"):
        run(job, tmp_path)


def test_gpt_oss_special_ids_sit_above_199000_and_match_tiktoken(family_rendered):
    """The fixture's Hugging Face tokenizer encodes as its tiktoken encoding does."""
    _, tok, _, items = family_rendered["gpt-oss.yaml"]
    enc = families.gpt_oss.tiktoken_encoding()
    assert min(families.gpt_oss.SPECIALS.values()) > 199_000
    prompts = [tok.decode(s.input_ids) for s in items if isinstance(s, Sample)]
    texts = [*prompts, "Don't stop: 12345 ünïcödé 東京 🙂\n\n  tabs\there", "assistant's"]
    for text in texts:
        assert tok.encode(text, add_special_tokens=False) == enc.encode(
            text, allowed_special="all"
        ), text
    # merges are real: a harmony word is fewer ids than bytes
    assert len(enc.encode("assistant")) < len("assistant")
    for s in items:
        assert isinstance(s, Sample) and s.input_ids[-2] == families.gpt_oss.SPECIALS["<|start|>"]


def test_llama_gets_json_string_arguments_as_objects(family_tokenizer_dir, tmp_path):
    """Llama-3.1's template prints arguments with tojson: OpenAI-format rows carry them as a
    JSON string, which must reach the template as the object (else the prompt holds a quoted
    string where the model saw an object in training)."""
    row = rows(STRING_ARGS)["results"]
    write_jsonl(tmp_path / "rows.jsonl", [row])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "turns": "all"}
    job = example_job("llama-3.1.yaml", family_tokenizer_dir("llama-3.1"), [ds])
    samples = {s.turn: s for s in run(job, tmp_path) if isinstance(s, Sample)}
    tok = AutoTokenizer.from_pretrained(family_tokenizer_dir("llama-3.1"))
    as_object = rows({"city": "Paris"})["results"]
    assert samples[1].input_ids == expected_ids(tok, job, as_object, 1)
    assert '"parameters": {"city": "Paris"}' in tok.decode(samples[1].input_ids)


def test_llama_builtin_tool_call_uses_python_tag_and_eom(family_tokenizer_dir, tmp_path):
    search = {
        "type": "function",
        "function": {
            "name": "brave_search",
            "description": "Web search",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
    row = {
        "id": "search",
        "tools": [search],
        "messages": [
            {"role": "user", "content": "Who won?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "brave_search", "arguments": {"query": "final"}},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "Team A won."},
        ],
    }
    write_jsonl(tmp_path / "rows.jsonl", [row])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    kwargs = {"date_string": "26 Jul 2024", "builtin_tools": ["brave_search", "wolfram_alpha"]}
    job = example_job(
        "llama-3.1.yaml", family_tokenizer_dir("llama-3.1"), [ds], chatTemplateKwargs=kwargs
    )
    [sample] = run(job, tmp_path)
    assert isinstance(sample, Sample)
    tok = AutoTokenizer.from_pretrained(family_tokenizer_dir("llama-3.1"))
    assert sample.input_ids == expected_ids(tok, job, row, 1)
    sp = families.llama3.SPECIALS
    tag = sample.input_ids.index(sp["<|python_tag|>"])
    assert tok.decode(sample.input_ids[tag:]).startswith(
        '<|python_tag|>brave_search.call(query="final")<|eom_id|>'
        "<|start_header_id|>ipython<|end_header_id|>\n\nTeam A won.<|eot_id|>"
    )


def test_llama_ipython_role_is_a_tool_result(family_tokenizer_dir, tmp_path):
    """Rows in Meta's own form (tool results as role `ipython`) render as the same rows with role
    `tool`: an `ipython` turn."""
    tool_row = rows({"city": "Paris"})["results"]
    ipython_row = copy.deepcopy(tool_row)
    ipython_row["id"] = "ipython"
    ipython_row["messages"][2]["role"] = "ipython"
    write_jsonl(tmp_path / "rows.jsonl", [tool_row, ipython_row])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = example_job("llama-3.1.yaml", family_tokenizer_dir("llama-3.1"), [ds])
    items = run(job, tmp_path)
    assert all(isinstance(i, Sample) for i in items) and len(items) == 2
    assert items[0].input_ids == items[1].input_ids
    tok = AutoTokenizer.from_pretrained(family_tokenizer_dir("llama-3.1"))
    assert "<|start_header_id|>ipython<|end_header_id|>" in tok.decode(items[0].input_ids)


def test_sharegpt_ipython_speaker_is_a_tool_result(family_tokenizer_dir, tmp_path):
    turns = [
        {"from": "human", "value": "Weather in Paris?"},
        {
            "from": "function_call",
            "value": '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        },
        {"from": "observation", "value": '{"temp_c": 21}'},
    ]
    ipython = copy.deepcopy(turns)
    ipython[2]["from"] = "ipython"
    write_jsonl(
        tmp_path / "rows.jsonl",
        [{"id": "a", "conversations": turns}, {"id": "b", "conversations": ipython}],
    )
    ds = {"name": "ds", "source": "rows.jsonl", "format": "sharegpt"}
    job = example_job("llama-3.1.yaml", family_tokenizer_dir("llama-3.1"), [ds])
    items = run(job, tmp_path)
    assert [type(i) for i in items] == [Sample, Sample]
    assert items[0].input_ids == items[1].input_ids
