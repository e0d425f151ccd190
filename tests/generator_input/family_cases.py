"""The model families' cases for tests/generator_input/test_families.py and
test_family_templates.py: the conversations (plain, multi-turn, tools, tool results), each
family's example job and what its rows look like, running a job in-process, and the tokenizer's
own ids to compare with."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from transformers import AutoTokenizer

from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.generator.rows.identity import select_turns
from draftgen.spec import parse_job
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
    ("deepseek-r1-0528", "deepseek-r1.yaml", ("plain", "multi"), STRING_ARGS, "reasoning_content"),
    ("gpt-oss", "gpt-oss.yaml", ALL, STRING_ARGS, "thinking"),
    ("llama-3.1", "llama-3.1.yaml", ALL, {"city": "Paris"}, "reasoning_content"),
]
IDS = [example.removesuffix(".yaml") for _, example, *_ in CASES]


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


def tok_ids(directory: Path, text: str) -> list[int]:
    return AutoTokenizer.from_pretrained(directory).encode(text, add_special_tokens=False)


def render_cases(tokenizer_dir: Callable[[str], Path], mktemp: Callable[[str], Path]) -> dict:
    """Per case (by example file): the job, its fixture tokenizer, the rows and every sample
    draftgen made of them."""
    out = {}
    for family, example, kinds, arguments, reasoning_key in CASES:
        base = mktemp("data")
        chosen = {k: v for k, v in rows(arguments, reasoning_key).items() if k in kinds}
        write_jsonl(base / "rows.jsonl", list(chosen.values()))
        ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "turns": "all"}
        job = example_job(example, tokenizer_dir(family), [ds])
        items = run(job, base)
        tok = AutoTokenizer.from_pretrained(tokenizer_dir(family))
        out[example] = (job, tok, chosen, items)
    return out
