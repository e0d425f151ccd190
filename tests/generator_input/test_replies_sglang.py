"""The reply parsers against production: every reply text of test_replies.py, and a few more,
parsed by SGLang's own reasoning parsers and function-call detectors (the CPU SGLang install,
tests/generator_input/sglang_reply_oracle.py, no server) gives the same content, reasoning and
calls as draftgen's parser of its family, except where draftgen departs on purpose (each listed
with its reason; docs/models.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from draftgen.generator.prompts.replies import (
    DeepSeekParser,
    GptOssParser,
    KimiParser,
    Llama3Parser,
    Qwen3Parser,
)
from draftgen.generator.prompts.replies.model import parse_arguments
from draftgen.generator.prompts.replies.reasoning import strip_end
from draftgen.testing.sglang import cache_dir

from .test_replies import MALFORMED, REASONING, WRITTEN

ORACLE = Path(__file__).with_name("sglang_reply_oracle.py")
SGLANG_PYTHON = cache_dir() / "venv-sglang" / "bin" / "python"

# draftgen's family -> SGLang's --reasoning-parser and --tool-call-parser for it
SGLANG_PARSERS = {
    "kimi-k2": ("kimi_k2", "kimi_k2"),
    "qwen3": ("qwen3", "qwen25"),
    "deepseek-v3.1": ("deepseek-v3", "deepseekv31"),
    "deepseek-r1": ("deepseek-r1", "deepseekv3"),
    "gpt-oss": ("gpt-oss", "gpt-oss"),
    "llama-3.1": (None, "llama3"),
}

R1 = DeepSeekParser(family="deepseek-r1", fenced_calls=True, closing_ends_reasoning=True)
WEATHER = '{"city": "Paris"}'
MORE = [
    (Qwen3Parser(), f"<think>\n{REASONING}\n</think>\n\nSunny.", False),
    (Qwen3Parser(), "Sunny, no reasoning.", False),
    (
        Qwen3Parser(),
        f'<think>\nR\n</think>\n\nLooking.\n<tool_call>\n{{"name": "get_weather", "arguments": '
        f'{WEATHER}}}\n</tool_call>\n<tool_call>\n{{"name": "get_time", "arguments": '
        f"{WEATHER}}}\n</tool_call>",
        False,
    ),
    (KimiParser(), f"{REASONING}</think>Sunny.", True),
    (
        KimiParser(),
        f"{REASONING}</think>Two calls.<|tool_calls_section_begin|><|tool_call_begin|>"
        f"functions.get_weather:0<|tool_call_argument_begin|>{WEATHER}<|tool_call_end|>"
        f"<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{WEATHER}"
        "<|tool_call_end|><|tool_calls_section_end|>",
        True,
    ),
    (KimiParser(), "No thinking here.", False),
    (
        DeepSeekParser(),
        f"{REASONING}</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>"
        f"{WEATHER}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{WEATHER}"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        True,
    ),
    (DeepSeekParser(), "Sunny.", False),
    (R1, f"{REASONING}</think>\n\nSunny.", True),
    (
        GptOssParser(),
        f"<|channel|>analysis<|message|>{REASONING}<|end|><|start|>assistant<|channel|>commentary"
        f" to=functions.get_weather <|constrain|>json<|message|>{WEATHER}<|call|>"
        f"<|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json"
        f"<|message|>{WEATHER}<|call|>",
        False,
    ),
    (Llama3Parser(), "Sunny.", False),
]
CASES = [(p.values[0], p.values[1], p.values[2], p.id) for p in WRITTEN] + [
    (parser, text, False, f"malformed-{p.id}") for p in MALFORMED for parser, text in [p.values[:2]]
]
CASES += [(parser, text, started, f"more-{i}") for i, (parser, text, started) in enumerate(MORE)]

# Where draftgen reads what SGLang does not, on purpose (docs/models.md):
DEPARTURES = {
    # harmony's header as the published template writes it: SGLang's call pattern wants
    # `<|constrain|>json` after the recipient and leaves the call in the content
    "gpt-oss-template-call-header": "calls",
    # Meta's built-in tool call: SGLang's llama3 detector reads JSON only
    "llama-3.1-builtin-tool": "calls",
    # no calls parsed: SGLang returns the text with its markers as content and no call; draftgen
    # keeps the call, malformed, so a chain ends `tool_call_diverged`
    **{f"malformed-{p.id}": "calls" for p in MALFORMED if p.id != "kimi"},
    # R1 and V3 share the template form: a reply with no `<think>`/`</think>` after a prompt that
    # opened none is V3's answer to draftgen, cut-off reasoning to SGLang's R1 parser
    "deepseek-v3-answer": "reasoning",
    # a call cut by the length limit inside its header: kept, malformed (SGLang drops it)
    "gpt-oss-cut-in-a-call-header": "calls",
    # SGLang's harmony parser takes no prompt that opened a channel (it reads such a reply with
    # its text fallback, which drops it or takes the reasoning for content); draftgen's prompts
    # end with `<|start|>assistant`, the cases are there for a generation prefix that would not
    "gpt-oss-prompt-opened-analysis": "reasoning",
    "gpt-oss-prompt-opened-final": "content",
}


def draftgen_view(parser: Any, text: str, started: bool) -> dict[str, Any]:
    reply = parser.parse(text, started_in_reasoning=started)
    return {
        "content": reply.content,
        "reasoning": reply.reasoning,
        "calls": [[c.name, c.arguments] for c in reply.tool_calls],
    }


@pytest.fixture(scope="module")
def sglang_views() -> dict[str, dict[str, Any]]:
    if not SGLANG_PYTHON.exists():
        pytest.skip(f"{SGLANG_PYTHON} is missing: run `make sglang`")
    cases = []
    for parser, text, started, _ in CASES:
        reasoning_parser, tool_parser = SGLANG_PARSERS[parser.family]
        cases.append(
            {
                "reasoning_parser": reasoning_parser,
                "tool_parser": tool_parser,
                "force_reasoning": started,
                # the server's text has no stop token: its detokenizer trims the one matched
                "text": strip_end(text, parser.end_tokens),
            }
        )
    out = subprocess.run(
        [str(SGLANG_PYTHON), str(ORACLE)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    ).stdout
    views = json.loads(out)
    for view in views:
        view["calls"] = [[name, parse_arguments(args)] for name, args in view["calls"]]
    return {case_id: view for (*_, case_id), view in zip(CASES, views, strict=True)}


@pytest.mark.parametrize(("parser", "text", "started", "case_id"), CASES, ids=[c[3] for c in CASES])
def test_a_reply_reads_as_sglang_reads_it(sglang_views, parser, text, started, case_id):
    ours, theirs = draftgen_view(parser, text, started), sglang_views[case_id]
    departs = DEPARTURES.get(case_id)
    if departs is None:
        assert ours == theirs
    else:
        assert ours[departs] != theirs[departs], f"{case_id} no longer departs: drop it"
