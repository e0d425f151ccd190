"""More model families (docs/models.md): Qwen3, DeepSeek-V3.1, gpt-oss, Llama-3.1.

Each family's example job (examples/) is run over the same conversations, with a fixture tokenizer
that reproduces the family's documented chat template (draftgen.testing.families): draftgen's
prompt ids must be the tokenizer's own `apply_chat_template` of the conversation as written, for a
plain prompt, a multi-turn chat, tools, tool results and every turn (`turns: all`), and each
family's history turns lose their reasoning exactly where its template says.
"""

from __future__ import annotations

import pytest
import yaml
from transformers import AutoTokenizer

from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.testing import families

from .family_cases import CASES, EXAMPLES, IDS, R_CALL, R_EARLIER, example_job, expected_ids, run


@pytest.mark.parametrize(("family", "example", "kinds", "arguments", "key"), CASES, ids=IDS)
def test_prompt_ids_are_the_templates_own(family_rendered, family, example, kinds, arguments, key):
    job, tok, chosen, items = family_rendered[example]
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
    family_rendered, family, example, kinds, arguments, key
):
    job, tok, _, items = family_rendered[example]
    module = {
        "qwen3": families.qwen3,
        "deepseek-v3.1": families.deepseek,
        "deepseek-r1-0528": families.deepseek,
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
def test_history_turns_lose_their_reasoning_where_the_template_says(family_rendered, example):
    _, tok, _, items = family_rendered[example]
    text = {
        (s.id.split("/")[1], s.turn): tok.decode(s.input_ids)
        for s in items
        if isinstance(s, Sample)
    }
    earlier, call_turn = REASONING_KEPT[example]
    assert (R_EARLIER in text[("multi", 1)]) is earlier
    assert (R_CALL in text[("results", 1)]) is call_turn
    assert R_EARLIER not in text[("multi", 0)] and R_CALL not in text[("results", 0)]


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
def test_glaive_conversations_render_in_each_familys_format(family_tokenizer_dir, family, example):
    """The demo's Glaive rows (tools, calls with single-quoted arguments, function responses)
    through each family's job with tool data: all samples, calls in the family's own form."""
    ds = {"name": "glaive", "source": "data/glaive.jsonl", "format": "glaive", "turns": "all"}
    job = example_job(example, family_tokenizer_dir(family), [ds])
    items = run(job, EXAMPLES)
    assert not [i for i in items if isinstance(i, Reject)]
    tok = AutoTokenizer.from_pretrained(family_tokenizer_dir(family))
    text = "\n".join(tok.decode(s.input_ids) for s in items if isinstance(s, Sample))
    call_form = {
        "qwen3": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lagos"}}\n</tool_call>',
        "deepseek-v3.1": '<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Lagos"}<｜tool▁call▁end｜>',
        "gpt-oss": "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
        '{"city": "Lagos"}<|call|>'
        "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>",
        "llama-3.1": '{"name": "get_weather", "parameters": {"city": "Lagos"}}<|eot_id|>'
        "<|start_header_id|>ipython<|end_header_id|>",
    }[family]
    assert call_form in text
