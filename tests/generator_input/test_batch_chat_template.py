"""The batched fast path (a batch's texts encoded in one `encode_batch_fast` call) must give
exactly the ids of the model's own `apply_chat_template(..., tokenize=True)`, and must be left
for the one-by-one encode when the probe cannot show that it does."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from draftgen.generator.prompts import chat_template
from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
from draftgen.generator.prompts.samples import Reject, Sample
from tests.generator.gen_helpers import template_ids

from .conftest import make_job, write_jsonl
from .tokenizer_fixture import NO_SYSTEM, build_tokenizer

REPO = Path(__file__).resolve().parents[2]
TINY_KIMI = REPO / ".cache" / "models" / "tiny-kimi"
PROMPTS = [{"name": "ds", "source": "d.jsonl", "format": "messages"}]


def tool(name: str) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Does {name}.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }


# (messages, tools): plain, system, multi-turn, tool calls and results, specials written as
# text, non-ASCII, a long turn, and one whose text merges across message boundaries.
CASES = [
    ([{"role": "user", "content": "Hi"}], None),
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}], None),
    (
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c\n\n  d"},
        ],
        None,
    ),
    (
        [
            {"role": "system", "content": "You can call tools."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "functions.get_weather:0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "functions.get_weather:0",
                "name": "get_weather",
                "content": '{"temp": 21}',
            },
        ],
        [tool("get_weather"), tool("get_time")],
    ),
    ([{"role": "user", "content": "What does <think> mean, and </think>? <|im_end|>"}], None),
    ([{"role": "user", "content": "naïve café 東京 🙂 \t\r\n" * 3}], None),
    ([{"role": "user", "content": "token budget server " * 2000}], None),
    (
        [
            {"role": "user", "content": "ends with spaces   "},
            {"role": "assistant", "content": "   "},
            {"role": "user", "content": "x"},
        ],
        [tool("lookup")],
    ),
]


def expected_ids(
    directory: Path, messages: list[dict], tools: list[dict] | None, thinking: bool
) -> list[int]:
    return template_ids(
        AutoTokenizer.from_pretrained(directory), messages, tools, thinking=thinking
    )


@pytest.mark.parametrize("thinking", [True, False])
def test_a_batch_gives_each_prompt_the_ids_of_apply_chat_template(tmp_path, thinking):
    if not (TINY_KIMI / "tokenizer.json").exists():
        pytest.skip("tiny-kimi not built yet: run `make models`")
    job = make_job(
        TINY_KIMI,
        PROMPTS,
        chatTemplateKwargs={"thinking": thinking},
        generationPrefix="<think>" if thinking else None,
    )
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        assert ctx.settings.route == "text" and ctx.settings.batch_encode  # the fast path is on
        rendered = ctx.renderer.render_many(CASES)
    tok = AutoTokenizer.from_pretrained(TINY_KIMI)
    for (messages, tools), r in zip(CASES, rendered, strict=True):
        assert r.error is None and r.prefix_ok and not r.missing_tools
        assert r.ids == expected_ids(TINY_KIMI, messages, tools, thinking=thinking)
        if tools:  # Kimi's own tool_declare turn, not raw JSON
            assert "tool_declare" in tok.decode(r.ids)
    assert (rendered[0].ids[-1] == 163606) is thinking  # <think>


def test_one_bad_prompt_in_a_batch_fails_alone(tmp_path):
    """A template refusal and a text the tokenizer cannot encode (a lone surrogate, which JSON
    allows) each become a reject; the rest of the batch keeps its exact ids."""
    directory = build_tokenizer(tmp_path / "no-system", NO_SYSTEM)
    rows = [
        {"id": "a", "messages": [{"role": "user", "content": "first"}]},
        {
            "id": "b",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "x"}],
        },
        {"id": "c", "messages": [{"role": "user", "content": "lone \ud800 surrogate"}]},
        {"id": "d", "messages": [{"role": "user", "content": "last"}]},
    ]
    write_jsonl(tmp_path / "d.jsonl", rows)
    job = make_job(directory, PROMPTS)
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        assert ctx.settings.batch_encode
        items = list(iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx))
    assert [(type(i).__name__, i.source_index) for i in items] == [
        ("Sample", 0),
        ("Reject", 1),
        ("Reject", 2),
        ("Sample", 3),
    ]
    assert {i.reason for i in items if isinstance(i, Reject)} == {"template_error"}
    for i in (items[0], items[3]):
        assert isinstance(i, Sample)
        assert i.input_ids == expected_ids(
            directory, rows[i.source_index]["messages"], None, thinking=True
        )


class _Backend:
    """The Rust tokenizer, with its batch encode missing (tokenizers before 0.21) or wrong."""

    def __init__(self, real, batch=None) -> None:
        self.real = real
        if batch is not None:
            self.encode_batch_fast = batch

    def encode(self, text, **kwargs):
        return self.real.encode(text, **kwargs)

    def decode(self, ids, **kwargs):
        return self.real.decode(ids, **kwargs)


@pytest.mark.parametrize("variant", ["missing", "wrong"])
def test_the_batch_encode_is_left_when_the_probe_cannot_show_it_gives_the_same_ids(
    tmp_path, kimi_like_dir, monkeypatch, variant
):
    real_backend = chat_template._backend

    def wrong(texts, **kwargs):  # drops each text's last id
        out = real_backend_of[0].encode_batch_fast(texts, **kwargs)
        return [type("E", (), {"ids": e.ids[:-1]})() for e in out]

    real_backend_of = []

    def patched(tokenizer):
        real = real_backend(tokenizer)
        real_backend_of[:] = [real]
        return _Backend(real, wrong if variant == "wrong" else None)

    monkeypatch.setattr(chat_template, "_backend", patched)
    job = make_job(kimi_like_dir, PROMPTS)
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        assert ctx.settings.backend_encode and not ctx.settings.batch_encode
        rendered = ctx.renderer.render_many(CASES)
    for (messages, tools), r in zip(CASES, rendered, strict=True):
        assert r.ids == expected_ids(kimi_like_dir, messages, tools, thinking=True)
