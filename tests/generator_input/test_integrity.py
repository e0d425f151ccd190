"""The generator refuses to start on set-ups that would make wrong data, saying how to fix them."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
from draftgen.generator.prompts.integrity import (
    STRICT_TOOL_SAMPLES,
    IntegrityError,
    tokenizer_fingerprint,
)
from draftgen.generator.prompts.samples import Reject, Sample
from tests.generator.gen_helpers import template_ids

from .conftest import make_job, write_jsonl
from .tokenizer_fixture import (
    BOS,
    ONE_TOOL_ONLY,
    SPECIALS,
    THINK,
    VOCAB_SIZE,
    WITH_BOS,
    build_tokenizer,
)

PROMPTS = [{"name": "ds", "source": "d.jsonl", "format": "prompt"}]
GLAIVE = [{"name": "fc", "source": "d.jsonl", "format": "glaive"}]


def tool(name: str) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def test_a_special_token_that_splits_is_refused_naming_its_ids(kimi_like_dir, tmp_path):
    job = make_job(kimi_like_dir, PROMPTS, specialTokens=["<think>", "<thinking>"])
    with pytest.raises(IntegrityError) as err:
        open_tokenizer(job, tmp_path, workers=0)
    msg = str(err.value)
    assert "model.specialTokens" in msg and "'<thinking>' encodes to" in msg
    assert "'<'" in msg and "model's own tokenizer" in msg
    assert "'<think>'" not in msg.split("but", 1)[1]  # the good one is not blamed


def test_special_tokens_are_single_ids(kimi_like_dir, tmp_path):
    with open_tokenizer(make_job(kimi_like_dir, PROMPTS), tmp_path, workers=0) as ctx:
        assert ctx.special_token_ids["<think>"] == THINK
        assert ctx.special_token_ids["<|tool_call_begin|>"] == SPECIALS["<|tool_call_begin|>"]


def test_a_prompt_without_the_generation_prefix_is_refused(kimi_like_dir, tmp_path):
    job = make_job(kimi_like_dir, PROMPTS, chatTemplateKwargs={})  # thinking off: no <think>
    with pytest.raises(IntegrityError) as err:
        open_tokenizer(job, tmp_path, workers=0)
    msg = str(err.value)
    assert "model.generationPrefix" in msg and "'<think>'" in msg
    assert "<|im_middle|>'" in msg and "chatTemplateKwargs" in msg and "thinking: true" in msg


def test_a_template_that_drops_tools_is_refused_at_start_for_glaive(drops_tools_dir, tmp_path):
    with pytest.raises(IntegrityError, match="drops tools.*draftgen_probe_lookup_weather"):
        open_tokenizer(make_job(drops_tools_dir, GLAIVE), tmp_path, workers=0)


def test_tools_dropped_on_a_messages_dataset_refuse_on_its_first_rows(drops_tools_dir, tmp_path):
    write_jsonl(
        tmp_path / "d.jsonl",
        [
            {"messages": [{"role": "user", "content": "no tools here"}]},
            {"messages": [{"role": "user", "content": "weather?"}], "tools": [tool("get_weather")]},
        ],
    )
    job = make_job(drops_tools_dir, [{"name": "ds", "source": "d.jsonl", "format": "messages"}])
    with open_tokenizer(job, tmp_path, workers=0) as ctx:  # no glaive dataset: nothing probed
        it = iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx)
        assert isinstance(next(it), Sample)
        with pytest.raises(
            IntegrityError, match="row 1's prompt does not contain its tools 'get_weather'"
        ):
            next(it)


def test_after_the_first_rows_a_sample_whose_tools_vanish_is_a_reject(tmp_path):
    tok = build_tokenizer(tmp_path / "one-tool", ONE_TOOL_ONLY)
    rows = [
        {"messages": [{"role": "user", "content": f"q{i}"}], "tools": [tool("lookup")]}
        for i in range(STRICT_TOOL_SAMPLES)
    ]
    rows.append(
        {"messages": [{"role": "user", "content": "two"}], "tools": [tool("a_fn"), tool("b_fn")]}
    )
    write_jsonl(tmp_path / "d.jsonl", rows)
    job = make_job(tok, [{"name": "ds", "source": "d.jsonl", "format": "messages"}])
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        items = list(iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx))
    assert sum(isinstance(i, Sample) for i in items) == STRICT_TOOL_SAMPLES
    assert isinstance(items[-1], Reject) and items[-1].reason == "tools_missing"
    assert "a_fn, b_fn" in items[-1].detail
    # the same row first in the file: refused
    write_jsonl(tmp_path / "d.jsonl", rows[::-1])
    with open_tokenizer(job, tmp_path, workers=0) as ctx, pytest.raises(IntegrityError):
        list(iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx))


def test_a_tokenizer_without_a_chat_template_is_refused(tmp_path):
    tok = build_tokenizer(tmp_path / "plain", template=None)
    with pytest.raises(IntegrityError, match="no chat template"):
        open_tokenizer(make_job(tok, PROMPTS), tmp_path, workers=0)
    # pretokenized datasets need no template
    job = make_job(
        tok, [{"name": "a", "source": "d.jsonl", "format": "pretokenized"}], generationPrefix=None
    )
    open_tokenizer(job, tmp_path, workers=0).close()


def test_render_then_encode_gives_the_ids_of_apply_chat_template_tokenize(tmp_path, kimi_like_dir):
    """The text route must equal the direct-ids route, also for a tokenizer that adds a BOS
    by itself (no double BOS)."""
    bos_dir = build_tokenizer(tmp_path / "bos", WITH_BOS, bos=True)
    conv = [
        {"role": "system", "content": "Be brief, é ü 東京."},
        {"role": "user", "content": "What's <think> in text?"},
    ]
    for directory in (kimi_like_dir, bos_dir):
        with open_tokenizer(make_job(directory, GLAIVE), tmp_path, workers=0) as ctx:
            assert ctx.settings.route == "text" and ctx.settings.backend_encode  # the fast path
            rendered = ctx.renderer.render(conv, [tool("get_weather")])
            tok = AutoTokenizer.from_pretrained(directory)
            assert rendered.ids == template_ids(tok, conv, [tool("get_weather")])
    bos_id = AutoTokenizer.from_pretrained(bos_dir).convert_tokens_to_ids(BOS)
    assert rendered.ids.count(bos_id) == 1


def test_fingerprint_gives_the_request_side_vocab_eos_and_specials(kimi_like_dir):
    fp = tokenizer_fingerprint(AutoTokenizer.from_pretrained(kimi_like_dir))
    assert fp["vocab_size"] == VOCAB_SIZE
    assert fp["eos_token_ids"] == [SPECIALS["<|im_end|>"]]
    assert fp["special_token_ids"]["<think>"] == THINK
    assert len(fp["chat_template_sha256"]) == 64
    json.dumps(fp)  # plain data, to log and compare
