"""On-policy chains (`history: regenerated`) for every model family, with each family's fixture
tokenizer and template and its example job's settings: turn 0's reply is the text the family's
model writes (reasoning and content, or reasoning and the dataset's tool call), encoded to output
ids; `ChainSteps.advance` — the generator's chain step — must give turn 1 a prompt whose ids are
the family's template applied to the conversation with the reply as the parsed assistant message
(so the template's own treatment of earlier reasoning applies), and a call that differs from the
dataset's must end the chain with `tool_call_diverged`. Here, beside family_cases, to reuse the
fixture tokenizers; tests/generator/test_chains.py has the chain's other rules on Kimi."""

from __future__ import annotations

import json
from typing import Any

import pytest

from draftgen.generator.prompts.chains import ChainSteps
from draftgen.generator.prompts.inputs import open_tokenizer
from draftgen.generator.prompts.samples import Sample
from tests.generator.gen_helpers import samples_of, write_jsonl

from .family_cases import example_job, rows

PARIS = {"city": "Paris"}
# The target's own reasoning and answer, unlike the dataset's (family_cases.rows), so a prompt
# shows whose turn it carries.
R_EARLIER = "MINE-1: the target's reasoning before its answer"
R_CALL = "MINE-2: the target's reasoning before its call"
WEATHER_JSON = json.dumps(PARIS)

# What each family's model writes after the generation prompt: (answer to "What is 2+2?" with
# reasoning R_EARLIER, the call get_weather(Paris) after reasoning R_CALL); None: no call case.
KIMI = (
    f"{R_EARLIER}</think>Four.<|im_end|>",
    f"{R_CALL}</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
    f"<|tool_call_argument_begin|>{WEATHER_JSON}<|tool_call_end|><|tool_calls_section_end|>"
    "<|im_end|>",
)
QWEN3 = (
    f"<think>\n{R_EARLIER}\n</think>\n\nFour.<|im_end|>",
    f"<think>\n{R_CALL}\n</think>\n\n<tool_call>\n"
    f'{{"name": "get_weather", "arguments": {WEATHER_JSON}}}\n</tool_call><|im_end|>',
)
DEEPSEEK_V31 = (f"{R_EARLIER}</think>Four.<｜end▁of▁sentence｜>", None)  # thinking: prompt opens it
DEEPSEEK_V31_TOOLS = (  # thinking off: the prompt closes reasoning, the model calls directly
    "Four.<｜end▁of▁sentence｜>",
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
    f"{WEATHER_JSON}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>",
)
DEEPSEEK_R1 = (f"<think>\n{R_EARLIER}\n</think>\n\nFour.<｜end▁of▁sentence｜>", None)
GPT_OSS = (
    f"<|channel|>analysis<|message|>{R_EARLIER}<|end|><|start|>assistant<|channel|>final"
    "<|message|>Four.<|return|>",
    f"<|channel|>analysis<|message|>{R_CALL}<|end|><|start|>assistant to=functions.get_weather"
    f"<|channel|>commentary json<|message|>{WEATHER_JSON}<|call|>",
)
LLAMA = ("Four.<|eot_id|>", f'{{"name": "get_weather", "parameters": {WEATHER_JSON}}}<|eot_id|>')

NO_CALLS = {
    "deepseek-v3.1.yaml": "V3.1's thinking job takes no tool rows; deepseek-v3.1-tools.yaml does",
    # A property of the template, not of chains: draftgen refuses rows whose tools the prompt
    # would not show (integrity), so no tool row reaches a chain under it.
    "deepseek-r1.yaml": "the R1-0528 fixture template does not render `tools`: tool rows are "
    "refused before any chain (integrity check)",
}

# (family, example job, replies, the reasoning key its template reads, whether the template
# keeps the reply's reasoning in turn 1's prompt (after the answer, after the call), the id the
# server gives the call when not `call_0`)
CASES = [
    pytest.param("kimi-k2.5", "kimi-k2.5.yaml", KIMI, "reasoning_content", (True, True),
                 "functions.get_weather:0", id="kimi-k2.5"),
    pytest.param("qwen3", "qwen3.yaml", QWEN3, "reasoning_content", (False, True),
                 None, id="qwen3"),
    pytest.param("deepseek-v3.1", "deepseek-v3.1.yaml", DEEPSEEK_V31, "reasoning_content",
                 (False, None), None, id="deepseek-v3.1"),
    pytest.param("deepseek-v3.1", "deepseek-v3.1-tools.yaml", DEEPSEEK_V31_TOOLS,
                 "reasoning_content", (False, False), None, id="deepseek-v3.1-tools"),
    pytest.param("deepseek-r1-0528", "deepseek-r1.yaml", DEEPSEEK_R1, "reasoning_content",
                 (False, None), None, id="deepseek-r1-0528"),
    pytest.param("gpt-oss", "gpt-oss.yaml", GPT_OSS, "thinking", (False, True), None,
                 id="gpt-oss"),
    pytest.param("llama-3.1", "llama-3.1.yaml", LLAMA, "reasoning_content", (False, False),
                 None, id="llama-3.1"),
]  # fmt: skip


def _tokenizer_dir(request, family: str):
    if family == "kimi-k2.5":
        return request.getfixturevalue("tiny_kimi")
    return request.getfixturevalue("family_tokenizer_dir")(family)


def _first_turn(request, tmp_path, family: str, example: str, row: dict[str, Any]):
    """The job (`row`, regenerated), its tokenizer context and turn 0's sample."""
    write_jsonl(tmp_path / "rows.jsonl", [row])
    ds = {
        "name": "ds",
        "source": "rows.jsonl",
        "format": "messages",
        "turns": "all",
        "history": "regenerated",
    }
    job = example_job(example, _tokenizer_dir(request, family), [ds])
    return job, open_tokenizer(job, tmp_path, workers=0)


def _template_ids(ctx, job, messages, tools) -> list[int]:
    return list(
        ctx.tokenizer.apply_chat_template(
            messages,
            tools=tools,
            add_generation_prompt=True,
            tokenize=True,
            return_dict=False,
            **job.spec.model.chat_template_kwargs,
        )
    )


@pytest.mark.parametrize(
    ("family", "example", "replies", "reasoning_key", "kept", "server_id"), CASES
)
@pytest.mark.parametrize("kind", ["multi", "results"])
def test_turn_1_carries_turn_0s_reply_as_the_template_puts_it(
    request, tmp_path, family, example, replies, reasoning_key, kept, server_id, kind
):
    answer, calling = replies
    if kind == "results" and calling is None:
        pytest.skip(NO_CALLS[example])
    # Llama-3.1's template prints arguments with tojson: its rows give them as objects.
    arguments = PARIS if family == "llama-3.1" else WEATHER_JSON
    row = rows(arguments, reasoning_key)[kind]
    job, ctx = _first_turn(request, tmp_path, family, example, row)
    with ctx:
        [first] = samples_of(job, ctx, tmp_path)
        assert isinstance(first, Sample) and first.turn == 0
        reply = answer if kind == "multi" else calling
        ids = ctx.tokenizer.encode(reply, add_special_tokens=False)
        answer_ids = ctx.tokenizer.encode(answer, add_special_tokens=False)
        end, nxt = ChainSteps(ctx).advance(first, ids, "stop", None)
        assert end is None and isinstance(nxt, Sample) and nxt.turn == 1

        given = row["messages"]
        if kind == "multi":
            # R1-0528 writes its own `<think>`: the text after `</think>` is the content, as
            # SGLang's deepseek-r1 parser gives it, and R1's template prints it unstripped.
            content = "\n\nFour." if family == "deepseek-r1-0528" else "Four."
            parsed: dict[str, Any] = {"role": "assistant", "content": content}
            parsed[reasoning_key] = R_EARLIER
            want = [given[0], parsed, given[2]]
        else:
            call_id = server_id or "call_0"  # the id the server gives the reply's call
            call = {"id": call_id, "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments}}  # fmt: skip
            parsed = {"role": "assistant", "content": "", "tool_calls": [call]}
            if family not in ("deepseek-v3.1", "llama-3.1"):  # these replies reason not
                parsed[reasoning_key] = R_CALL
            want = [given[0], parsed, {**given[2], "tool_call_id": call_id}]
        want_ids = _template_ids(ctx, job, want, row.get("tools"))
        text = ctx.tokenizer.decode(nxt.input_ids, skip_special_tokens=False)
        assert text == ctx.tokenizer.decode(want_ids, skip_special_tokens=False)
        assert nxt.input_ids == want_ids
        reasoning = R_EARLIER if kind == "multi" else R_CALL
        assert (reasoning in text) is kept[kind == "results"]
        assert "40." not in text and "It is 21" not in text  # the dataset's later replies
        # Turn 1 is the conversation's last: its reply completes the chain.
        assert ChainSteps(ctx).advance(nxt, answer_ids, "stop", None) == ("complete", None)
        if kind == "results":
            assert '"temp_c": 21' in text  # the dataset's tool result goes on the chain
            # A call that differs from the dataset's ends the chain at turn 0.
            diverged = ctx.tokenizer.encode(
                calling.replace("Paris", "Lyon"), add_special_tokens=False
            )
            assert ChainSteps(ctx).advance(first, diverged, "stop", None) == (
                "tool_call_diverged",
                None,
            )
