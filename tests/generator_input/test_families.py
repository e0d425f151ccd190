"""More model families (docs/models.md): Qwen3, DeepSeek-V3.1, gpt-oss, Llama-3.1.

Each family's example job (examples/) is run over the same conversations, with a fixture tokenizer
that reproduces the family's documented chat template (draftgen.testing.families): draftgen's
prompt ids must be the tokenizer's own `apply_chat_template` of the conversation as written, for a
plain prompt, a multi-turn chat, tools, tool results and every turn (`turns: all`), and each
family's history turns lose their reasoning exactly where its template says.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from transformers import AutoTokenizer

from draftgen.generator.identity import select_turns
from draftgen.generator.inputs import iter_samples, open_tokenizer
from draftgen.generator.samples import Reject, Sample
from draftgen.spec import parse_job
from draftgen.testing import families
from tests.generator.gen_helpers import WEATHER_TOOL, write_jsonl

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

# Reasoning texts, one per place, so a prompt shows which survived.
R_EARLIER = "R1: earlier answer's reasoning"
R_CALL = "R2: reasoning before the call"


def call(arguments: Any) -> dict[str, Any]:
    return {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }


def rows(arguments: Any, reasoning_key: str = "reasoning_content") -> dict[str, dict[str, Any]]:
    """The conversations every family runs (OpenAI messages rows), by kind; `arguments` is how
    the tool call's arguments are written, `reasoning_key` the key assistant turns carry their
    reasoning under."""
    return {
        "plain": {
            "id": "plain",
            "messages": [
                {"role": "system", "content": "Answer in one sentence."},
                {"role": "user", "content": "Why is the sky blue?"},
            ],
        },
        "multi": {
            "id": "multi",
            "messages": [
                {"role": "user", "content": "What is 2+2?"},
                {"role": "assistant", "content": "4.", reasoning_key: R_EARLIER},
                {"role": "user", "content": "And times 10?"},
                {"role": "assistant", "content": "40."},
            ],
        },
        "tools": {
            "id": "tools",
            "tools": [WEATHER_TOOL],
            "messages": [{"role": "user", "content": "Is it raining in Lagos?"}],
        },
        "results": {
            "id": "results",
            "tools": [WEATHER_TOOL],
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {
                    "role": "assistant",
                    "content": "",
                    reasoning_key: R_CALL,
                    "tool_calls": [call(arguments)],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'},
                {"role": "assistant", "content": "It is 21 °C in Paris."},
            ],
        },
    }


# (family, example job, kinds of rows it takes, how its rows write arguments, the reasoning key
# its template reads). DeepSeek-V3.1's thinking job takes no tool rows (its tool job does);
# Llama-3.1's template prints arguments with tojson, so its rows give them as objects (see
# test_llama_gets_json_string_arguments_as_objects).
STRING_ARGS = json.dumps({"city": "Paris"})
ALL = ("plain", "multi", "tools", "results")
CASES = [
    ("qwen3", "qwen3.yaml", ALL, STRING_ARGS, "reasoning_content"),
    ("deepseek-v3.1", "deepseek-v3.1.yaml", ("plain", "multi"), STRING_ARGS, "reasoning_content"),
    ("deepseek-v3.1", "deepseek-v3.1-tools.yaml", ALL, STRING_ARGS, "reasoning_content"),
    ("deepseek-r1", "deepseek-r1.yaml", ("plain", "multi"), STRING_ARGS, "reasoning_content"),
    ("gpt-oss", "gpt-oss.yaml", ALL, STRING_ARGS, "thinking"),
    ("llama-3.1", "llama-3.1.yaml", ALL, {"city": "Paris"}, "reasoning_content"),
]
IDS = [example.removesuffix(".yaml") for _, example, *_ in CASES]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Callable[[str], Path]:
    """The family's fixture tokenizer directory, built once per module."""
    built: dict[str, Path] = {}

    def get(family: str) -> Path:
        if family not in built:
            built[family] = families.build(family, tmp_path_factory.mktemp("families") / family)
        return built[family]

    return get


def example_job(example: str, tokenizer: Path, datasets: list[dict[str, Any]], **model: Any):
    """The example job with its model settings as shipped, the fixture tokenizer and `datasets`."""
    doc = yaml.safe_load((EXAMPLES / example).read_text())
    doc["spec"]["model"]["tokenizer"] = str(tokenizer)
    doc["spec"]["model"].update(model)
    doc["spec"]["datasets"] = datasets
    return parse_job(doc)


def run(job, base: Path) -> list[Sample | Reject]:
    with open_tokenizer(job, base, workers=0) as ctx:
        return [
            item
            for ds in job.spec.datasets
            for item in iter_samples(job, ds, base_dir=base, tokenizer_ctx=ctx)
        ]


def expected_ids(tok: Any, job, row: dict[str, Any], turn: int) -> list[int]:
    """The tokenizer's own ids for `turn` of `row`, from the conversation as written."""
    prompt = dict(select_turns(copy.deepcopy(row["messages"]), "all"))[turn]
    return list(
        tok.apply_chat_template(
            prompt,
            tools=row.get("tools"),
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
            **job.spec.model.chat_template_kwargs,
        )
    )


@pytest.fixture(scope="module")
def rendered(tokenizer_dir, tmp_path_factory):
    """Per case: the job, its fixture tokenizer, the rows and every sample draftgen made."""
    out = {}
    for family, example, kinds, arguments, reasoning_key in CASES:
        base = tmp_path_factory.mktemp("data")
        chosen = {k: v for k, v in rows(arguments, reasoning_key).items() if k in kinds}
        write_jsonl(base / "rows.jsonl", list(chosen.values()))
        ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "turns": "all"}
        job = example_job(example, tokenizer_dir(family), [ds])
        items = run(job, base)
        tok = AutoTokenizer.from_pretrained(tokenizer_dir(family))
        out[example] = (job, tok, chosen, items)
    return out


@pytest.mark.parametrize(("family", "example", "kinds", "arguments", "key"), CASES, ids=IDS)
def test_prompt_ids_are_the_templates_own(rendered, family, example, kinds, arguments, key):
    job, tok, chosen, items = rendered[example]
    assert not [i for i in items if isinstance(i, Reject)]
    samples = {(s.id.split("/")[1], s.turn): s for s in items if isinstance(s, Sample)}
    # plain 1, tools 1 (pending), multi 2, results 2 (the call, then the answer to its result)
    wanted = {"plain": [0], "tools": [0], "multi": [0, 1], "results": [0, 1]}
    assert sorted(samples) == sorted((k, t) for k in kinds for t in wanted[k])
    for (kind, turn), sample in samples.items():
        assert sample.input_ids == expected_ids(tok, job, chosen[kind], turn), (kind, turn)
    prefix = job.spec.model.generation_prefix
    if prefix:
        tail = tok.encode(prefix, add_special_tokens=False)
        assert all(s.input_ids[-len(tail) :] == tail for s in samples.values())


@pytest.mark.parametrize(("family", "example", "kinds", "arguments", "key"), CASES, ids=IDS)
def test_special_tokens_are_single_ids_at_the_real_models_ids(
    rendered, family, example, kinds, arguments, key
):
    job, tok, _, items = rendered[example]
    module = {
        "qwen3": families.qwen3,
        "deepseek-v3.1": families.deepseek,
        "deepseek-r1": families.deepseek,
        "gpt-oss": families.gpt_oss,
        "llama-3.1": families.llama3,
    }[family]
    assert len(tok) == module.VOCAB_SIZE
    for token in job.spec.model.special_tokens:
        assert tok.encode(token, add_special_tokens=False) == [module.SPECIALS[token]], token
    used = {t for s in items if isinstance(s, Sample) for t in s.input_ids}
    assert {module.SPECIALS[t] for t in job.spec.model.special_tokens} & used


# Which history reasoning each family's template keeps: (the earlier answer's, the tool call's
# after the last user query / final answer), as docs/models.md states.
REASONING_KEPT = {
    "qwen3.yaml": (False, True),
    "deepseek-v3.1-tools.yaml": (False, False),
    "gpt-oss.yaml": (False, True),
    "llama-3.1.yaml": (False, False),
}


@pytest.mark.parametrize("example", sorted(REASONING_KEPT))
def test_history_turns_lose_their_reasoning_where_the_template_says(rendered, example):
    _, tok, _, items = rendered[example]
    text = {
        (s.id.split("/")[1], s.turn): tok.decode(s.input_ids)
        for s in items
        if isinstance(s, Sample)
    }
    earlier, call_turn = REASONING_KEPT[example]
    assert (R_EARLIER in text[("multi", 1)]) is earlier
    assert (R_CALL in text[("results", 1)]) is call_turn
    assert R_EARLIER not in text[("multi", 0)] and R_CALL not in text[("results", 0)]


def test_qwen3_without_thinking_writes_the_empty_think_block(tokenizer_dir, tmp_path):
    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["plain"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = example_job(
        "qwen3.yaml",
        tokenizer_dir("qwen3"),
        [ds],
        chatTemplateKwargs={"enable_thinking": False},
        generationPrefix="</think>\n\n",
    )
    [sample] = run(job, tmp_path)
    assert isinstance(sample, Sample)
    think, end = families.qwen3.SPECIALS["<think>"], families.qwen3.SPECIALS["</think>"]
    assert sample.input_ids[-6:-2] == [think, *tok_ids(tokenizer_dir("qwen3"), "\n\n"), end]


def tok_ids(directory: Path, text: str) -> list[int]:
    return AutoTokenizer.from_pretrained(directory).encode(text, add_special_tokens=False)


def test_deepseek_prompt_after_a_tool_result_has_no_generation_prompt(rendered):
    job, tok, _, items = rendered["deepseek-v3.1-tools.yaml"]
    by_turn = {(s.id.split("/")[1], s.turn): s for s in items if isinstance(s, Sample)}
    sp = families.deepseek.SPECIALS
    assert by_turn[("results", 1)].input_ids[-1] == sp["<｜tool▁output▁end｜>"]
    assert by_turn[("results", 0)].input_ids[-2:] == [sp["<｜Assistant｜>"], sp["</think>"]]
    # BOS once: printed by the template, not added again by encoding
    assert all(s.input_ids.count(sp["<｜begin▁of▁sentence｜>"]) == 1 for s in by_turn.values())


def test_deepseek_thinking_job_refuses_tool_results(tokenizer_dir, tmp_path):
    """The thinking job's `<think>` prefix is missing after a tool result: refused at start."""
    from draftgen.generator.integrity import IntegrityError

    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["results"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "turns": "all"}
    job = example_job("deepseek-v3.1.yaml", tokenizer_dir("deepseek-v3.1"), [ds])
    with pytest.raises(IntegrityError, match="generationPrefix"):
        run(job, tmp_path)


def test_deepseek_template_without_tools_is_refused_for_tool_rows(tokenizer_dir, tmp_path):
    """The template DeepSeek-V3.1's tokenizer ships declares no tools: refused, not run."""
    from draftgen.generator.integrity import IntegrityError

    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["tools"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = example_job("deepseek-v3.1-tools.yaml", tokenizer_dir("deepseek-v3.1-no-tools"), [ds])
    with pytest.raises(IntegrityError, match="does not contain its tools"):
        run(job, tmp_path)


def test_deepseek_r1_prompts_end_with_think_and_a_newline(rendered):
    _, tok, _, items = rendered["deepseek-r1.yaml"]
    tail = [families.deepseek.SPECIALS["<｜Assistant｜>"], families.deepseek.SPECIALS["<think>"]]
    tail += tok.encode("\n", add_special_tokens=False)
    assert all(s.input_ids[-3:] == tail for s in items if isinstance(s, Sample))


def test_gpt_oss_special_ids_sit_above_199000_and_match_tiktoken(rendered):
    """The fixture's Hugging Face tokenizer encodes as its tiktoken encoding does."""
    _, tok, _, items = rendered["gpt-oss.yaml"]
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


def test_llama_gets_json_string_arguments_as_objects(tokenizer_dir, tmp_path):
    """Llama-3.1's template prints arguments with tojson: OpenAI-format rows carry them as a
    JSON string, which must reach the template as the object (else the prompt holds a quoted
    string where the model saw an object in training)."""
    row = rows(STRING_ARGS)["results"]
    write_jsonl(tmp_path / "rows.jsonl", [row])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "turns": "all"}
    job = example_job("llama-3.1.yaml", tokenizer_dir("llama-3.1"), [ds])
    samples = {s.turn: s for s in run(job, tmp_path) if isinstance(s, Sample)}
    tok = AutoTokenizer.from_pretrained(tokenizer_dir("llama-3.1"))
    as_object = rows({"city": "Paris"})["results"]
    assert samples[1].input_ids == expected_ids(tok, job, as_object, 1)
    assert '"parameters": {"city": "Paris"}' in tok.decode(samples[1].input_ids)


def test_llama_builtin_tool_call_uses_python_tag_and_eom(tokenizer_dir, tmp_path):
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
    job = example_job("llama-3.1.yaml", tokenizer_dir("llama-3.1"), [ds], chatTemplateKwargs=kwargs)
    [sample] = run(job, tmp_path)
    assert isinstance(sample, Sample)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir("llama-3.1"))
    assert sample.input_ids == expected_ids(tok, job, row, 1)
    sp = families.llama3.SPECIALS
    tag = sample.input_ids.index(sp["<|python_tag|>"])
    assert tok.decode(sample.input_ids[tag:]).startswith(
        '<|python_tag|>brave_search.call(query="final")<|eom_id|>'
        "<|start_header_id|>ipython<|end_header_id|>\n\nTeam A won.<|eot_id|>"
    )


@pytest.mark.parametrize("example", sorted({example for _, example, *_ in CASES}))
def test_example_validates(example, capsys):
    """`draftgen validate` accepts the shipped example, and so does the CRD's schema."""
    import jsonschema

    from draftgen.cli import main
    from draftgen.crd import openapi_schema

    assert main(["validate", str(EXAMPLES / example)]) == 0
    assert "is valid" in capsys.readouterr().out
    doc = yaml.safe_load((EXAMPLES / example).read_text())
    jsonschema.Draft4Validator(openapi_schema()).validate(doc)


GLAIVE_EXAMPLES = [(f, e) for f, e, *_ in CASES if e != "deepseek-v3.1.yaml" and "r1" not in e]


@pytest.mark.parametrize(
    ("family", "example"), GLAIVE_EXAMPLES, ids=[e for _, e in GLAIVE_EXAMPLES]
)
def test_glaive_conversations_render_in_each_familys_format(tokenizer_dir, family, example):
    """The demo's Glaive rows (tools, calls with single-quoted arguments, function responses)
    through each family's job with tool data: all samples, calls in the family's own form."""
    ds = {"name": "glaive", "source": "data/glaive.jsonl", "format": "glaive", "turns": "all"}
    job = example_job(example, tokenizer_dir(family), [ds])
    items = run(job, EXAMPLES)
    assert not [i for i in items if isinstance(i, Reject)]
    tok = AutoTokenizer.from_pretrained(tokenizer_dir(family))
    text = "\n".join(tok.decode(s.input_ids) for s in items if isinstance(s, Sample))
    call_form = {
        "qwen3": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lagos"}}\n</tool_call>',
        "deepseek-v3.1": '<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Lagos"}<｜tool▁call▁end｜>',
        "gpt-oss": 'to=functions.get_weather <|constrain|>json<|message|>{"city": "Lagos"}<|call|>'
        "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>",
        "llama-3.1": '{"name": "get_weather", "parameters": {"city": "Lagos"}}<|eot_id|>'
        "<|start_header_id|>ipython<|end_header_id|>",
    }[family]
    assert call_form in text


def test_llama_ipython_role_is_a_tool_result(tokenizer_dir, tmp_path):
    """Rows in Meta's own form (tool results as role `ipython`) render as the same rows with role
    `tool`: an `ipython` turn."""
    tool_row = rows({"city": "Paris"})["results"]
    ipython_row = copy.deepcopy(tool_row)
    ipython_row["id"] = "ipython"
    ipython_row["messages"][2]["role"] = "ipython"
    write_jsonl(tmp_path / "rows.jsonl", [tool_row, ipython_row])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages"}
    job = example_job("llama-3.1.yaml", tokenizer_dir("llama-3.1"), [ds])
    items = run(job, tmp_path)
    assert all(isinstance(i, Sample) for i in items) and len(items) == 2
    assert items[0].input_ids == items[1].input_ids
    tok = AutoTokenizer.from_pretrained(tokenizer_dir("llama-3.1"))
    assert "<|start_header_id|>ipython<|end_header_id|>" in tok.decode(items[0].input_ids)


def test_sharegpt_ipython_speaker_is_a_tool_result(tokenizer_dir, tmp_path):
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
    job = example_job("llama-3.1.yaml", tokenizer_dir("llama-3.1"), [ds])
    items = run(job, tmp_path)
    assert [type(i) for i in items] == [Sample, Sample]
    assert items[0].input_ids == items[1].input_ids
