"""With the project's tiny-kimi tokenizer (Kimi-K2 special-token ids, `tool_declare` template):
tools are declared in the model's own format and the prompt ends with `<think>` (163606)."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.spec import load_job
from tests.generator.gen_helpers import template_ids

REPO = Path(__file__).resolve().parents[2]
TINY_KIMI = REPO / ".cache" / "models" / "tiny-kimi"
pytestmark = pytest.mark.skipif(
    not (TINY_KIMI / "tokenizer.json").exists(), reason="tiny-kimi not built yet: run `make models`"
)

KIMI_IDS = {
    "<|im_end|>": 163586,
    "<|im_user|>": 163587,
    "<|im_assistant|>": 163588,
    "<|im_system|>": 163594,
    "<|tool_calls_section_begin|>": 163595,
    "<|im_middle|>": 163601,
    "<think>": 163606,
    "</think>": 163607,
}


@pytest.fixture(scope="module")
def demo():
    """examples/demo.yaml, which points at tiny-kimi, and its tokenizer context."""
    job = load_job(REPO / "examples" / "demo.yaml")
    base = REPO / "examples"
    with open_tokenizer(job, base, workers=0) as ctx:
        yield job, base, ctx


def test_special_tokens_are_single_kimi_ids(demo):
    _, _, ctx = demo
    tok = ctx.tokenizer
    for text, tid in KIMI_IDS.items():
        assert tok.encode(text, add_special_tokens=False) == [tid]
    assert ctx.special_token_ids["<think>"] == 163606
    assert ctx.fingerprint["vocab_size"] > 163607


def test_glaive_tools_are_declared_in_input_ids_and_prompts_end_with_think(demo):
    job, base, ctx = demo
    glaive = next(ds for ds in job.spec.datasets if ds.format == "glaive")
    items = list(iter_samples(job, glaive, base_dir=base, tokenizer_ctx=ctx))
    samples = [i for i in items if isinstance(i, Sample)]
    assert samples and not [i for i in items if isinstance(i, Reject)]
    with_tools = [s for s in samples if s.info["num_tools"]]
    assert with_tools
    tok = ctx.tokenizer
    declare = tok.encode("<|im_system|>tool_declare<|im_middle|>", add_special_tokens=False)
    for s in samples:
        assert s.input_ids[-2:] == [163601, 163606]  # ...<|im_middle|><think>
        assert 163588 in s.input_ids[-8:]  # <|im_assistant|>
    for s in with_tools:
        assert s.input_ids[: len(declare)] == declare
        text = tok.decode(s.input_ids)
        assert "namespace functions {" in text and "type " in text
    # a turn after a call carries the call in Kimi's own tool-call tokens
    later = [s for s in with_tools if 163595 in s.input_ids]
    assert later and all(163597 in s.input_ids or 163596 in s.input_ids for s in later)


def test_the_ids_are_what_apply_chat_template_gives(demo):
    job, base, ctx = demo
    chat = next(
        ds
        for ds in job.spec.datasets
        if ds.format == "messages" and ds.selection.mode == "sequential"
    )
    item = next(iter_samples(job, chat, base_dir=base, tokenizer_ctx=ctx))
    assert isinstance(item, Sample)
    import json

    row = json.loads((base / chat.source).read_text().splitlines()[0])
    tok = AutoTokenizer.from_pretrained(TINY_KIMI)
    from draftgen.generator.rows.identity import select_turns

    [(_, prompt)] = select_turns(row["messages"], "last")
    expected = template_ids(tok, prompt)
    assert item.input_ids == expected
    assert expected[-1] == 163606


TINY_CHATML = REPO / ".cache" / "models" / "tiny-chatml"


@pytest.mark.skipif(
    not (TINY_CHATML / "tokenizer.json").exists(), reason="tiny-chatml not built: run `make models`"
)
def test_the_kimi_job_with_another_models_tokenizer_is_refused(tmp_path):
    """demo.yaml's Kimi settings against the ChatML test model's tokenizer: wrong data, refused."""
    from draftgen.generator.prompts.integrity import IntegrityError

    job = load_job(REPO / "examples" / "demo.yaml")
    job.spec.model.tokenizer = str(TINY_CHATML)
    with pytest.raises(
        IntegrityError, match="model.specialTokens: .*'<\\|tool_calls_section_begin\\|>' encodes to"
    ):
        open_tokenizer(job, REPO / "examples", workers=0)
    job.spec.model.special_tokens = []
    with pytest.raises(IntegrityError, match="model.generationPrefix: .*not '<think>'"):
        open_tokenizer(job, REPO / "examples", workers=0)
