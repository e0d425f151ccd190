"""`spec.datasets[].thinking` (docs/models.md): each family's switch and prefix through its
example job and fixture template (tiny-kimi's Kimi-K2.5 template for Kimi), the seeded per-
conversation `mix` recorded per record, the conflicts refused by name, and the fingerprint."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from draftgen.generator.prompts.integrity import IntegrityError
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.generator.prompts.thinking import thinks
from draftgen.output.fingerprint import SpecChanged, check_fingerprint, dataset_fingerprint
from draftgen.spec import DatasetSpec
from tests.generator.gen_helpers import write_jsonl

from .family_cases import STRING_ARGS, example_job, rows, run

# family fixture, example job, the prompt's last text with thinking on, with it off, and a
# piece of text only the mode's prompt has (None: the prefix says it all).
FAMILIES = [
    ("kimi", "kimi-k2.5.yaml", "<|im_middle|><think>", "<|im_middle|><think></think>", None),
    ("qwen3", "qwen3.yaml", "<|im_start|>assistant\n", "<think>\n\n</think>\n\n", None),
    ("deepseek-v3.1", "deepseek-v3.1.yaml", "<｜Assistant｜><think>", "<｜Assistant｜></think>", None),
    ("gpt-oss", "gpt-oss.yaml", "<|start|>assistant", "<|start|>assistant", "Reasoning: "),
]  # fmt: skip


@pytest.fixture
def tokenizer_of(family_tokenizer_dir, tiny_kimi):
    return lambda family: tiny_kimi if family == "kimi" else family_tokenizer_dir(family)


def _run(tokenizer_of, family, example, tmp_path, row_list, **dataset):
    write_jsonl(tmp_path / "rows.jsonl", row_list)
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "turns": "all", **dataset}
    job = example_job(example, tokenizer_of(family), [ds])
    items = run(job, tmp_path)
    assert not [i for i in items if isinstance(i, Reject)], items
    return job, items


@pytest.mark.parametrize(("family", "example", "on_tail", "off_tail", "marker"), FAMILIES)
def test_each_family_ends_its_prompts_as_documented(
    tokenizer_of, tmp_path, family, example, on_tail, off_tail, marker
):
    tok = AutoTokenizer.from_pretrained(tokenizer_of(family))
    chat = [rows(STRING_ARGS)["plain"], rows(STRING_ARGS)["multi"]]
    texts = {}
    for mode, tail in (("on", on_tail), ("off", off_tail)):
        _, items = _run(tokenizer_of, family, example, tmp_path, chat, thinking=mode)
        assert len(items) == 3 and all(s.thinking is (mode == "on") for s in items)
        texts[mode] = [tok.decode(s.input_ids) for s in items]
        assert all(t.endswith(tail) for t in texts[mode]), (mode, texts[mode][0][-40:])
    if marker:  # gpt-oss: the same prefix, the effort in the system message
        assert all(f"{marker}high" in t for t in texts["on"])  # the example job's effort
        assert all(f"{marker}low" in t for t in texts["off"])
    assert texts["on"] != texts["off"]


def test_unset_thinking_keeps_the_jobs_own_settings(tokenizer_of, tmp_path):
    """No `thinking`: the example's kwargs and prefix render as before, nothing recorded."""
    job, items = _run(tokenizer_of, "qwen3", "qwen3.yaml", tmp_path, [rows(STRING_ARGS)["plain"]])
    [sample] = items
    assert sample.thinking is None
    _, [on] = _run(
        tokenizer_of, "qwen3", "qwen3.yaml", tmp_path, [rows(STRING_ARGS)["plain"]], thinking="on"
    )
    assert on.input_ids == sample.input_ids  # the job's enable_thinking: true is `on`


def _conversations(n: int) -> list[dict]:
    return [
        {"id": f"c{i}", "messages": [{"role": "user", "content": f"Question {i}?"}]}
        for i in range(n)
    ]


def test_mix_is_seeded_per_conversation_stable_and_recorded(tokenizer_of, tmp_path):
    """40 conversations at ratio 0.5: both modes, each conversation's mode the same on a second
    run and in another row order, every turn of a conversation alike; another seed splits
    differently."""
    mix = {"thinking": "mix", "thinkingMix": {"ratio": 0.5, "seed": 7}}
    convs = _conversations(40)
    tok = AutoTokenizer.from_pretrained(tokenizer_of("qwen3"))

    def modes(row_list, **dataset):
        _, items = _run(tokenizer_of, "qwen3", "qwen3.yaml", tmp_path, row_list, **dataset)
        for s in items:  # the prompt is the mode's
            assert tok.decode(s.input_ids).endswith("</think>\n\n") is (not s.thinking)
        return {s.id: s.thinking for s in items}

    first = modes(convs, **mix)
    assert 10 <= sum(first.values()) <= 30
    assert modes(convs, **mix) == first
    assert modes(list(reversed(convs)), **mix) == first
    other = modes(convs, thinking="mix", thinkingMix={"ratio": 0.5, "seed": 8})
    assert other != first
    multi = [rows(STRING_ARGS)["multi"]] * 1
    turns = modes(multi, **mix)
    assert len(turns) == 2 and len(set(turns.values())) == 1


def test_mix_ratio_ends_are_all_one_mode():
    ds = {"name": "d", "source": "x.jsonl", "format": "messages", "thinking": "mix"}
    none = DatasetSpec.model_validate({**ds, "thinkingMix": {"ratio": 0.0}})
    every = DatasetSpec.model_validate({**ds, "thinkingMix": {"ratio": 1.0}})
    keys = [f"k{i}" for i in range(50)]
    assert not any(thinks(none, k) for k in keys) and all(thinks(every, k) for k in keys)


def test_a_template_without_a_switch_is_refused_naming_the_field(family_tokenizer_dir, tmp_path):
    write_jsonl(tmp_path / "rows.jsonl", [rows({"city": "Paris"})["plain"]])
    ds = {"name": "chat", "source": "rows.jsonl", "format": "messages", "thinking": "off"}
    job = example_job("llama-3.1.yaml", family_tokenizer_dir("llama-3.1"), [ds])
    with pytest.raises(IntegrityError, match=r"spec\.datasets\[chat\]\.thinking"):
        run(job, tmp_path)


def test_conflicting_job_settings_are_refused_naming_the_field(family_tokenizer_dir, tmp_path):
    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["plain"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "thinking": "on"}
    qwen = family_tokenizer_dir("qwen3")
    job = example_job("qwen3.yaml", qwen, [ds], generationPrefix="<think>\n")
    with pytest.raises(IntegrityError, match=r"spec\.model\.generationPrefix"):
        run(job, tmp_path)
    oss = family_tokenizer_dir("gpt-oss")
    job = example_job("gpt-oss.yaml", oss, [ds], chatTemplateKwargs={"reasoning_effort": "low"})
    with pytest.raises(IntegrityError, match=r"chatTemplateKwargs\.reasoning_effort"):
        run(job, tmp_path)


def test_a_template_that_writes_another_prefix_is_refused_at_start(kimi_like_dir, tmp_path):
    """The compact Kimi-like fixture writes nothing for `thinking: false`, where Kimi-K2.5's
    published template writes `<think></think>`: refused before any request."""
    from .conftest import make_job

    write_jsonl(tmp_path / "rows.jsonl", [rows(STRING_ARGS)["plain"]])
    ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", "thinking": "off"}
    job = make_job(kimi_like_dir, [ds], generationPrefix=None)
    with pytest.raises(
        IntegrityError, match=r"datasets\[ds\]\.thinking: with thinking off.*'<think></think>'"
    ):
        run(job, tmp_path)


def test_spec_rules():
    base = {"name": "d", "source": "x.jsonl", "format": "messages"}
    with pytest.raises(ValueError, match="thinkingMix applies to thinking: mix only"):
        DatasetSpec.model_validate({**base, "thinking": "on", "thinkingMix": {"ratio": 0.2}})
    with pytest.raises(ValueError, match=r"chains \(history: regenerated\)"):
        chained = {"turns": "all", "history": "regenerated", "thinking": "on"}
        DatasetSpec.model_validate({**base, **chained})
    with pytest.raises(ValueError, match="pretokenized"):
        DatasetSpec.model_validate({**base, "format": "pretokenized", "thinking": "off"})
    with pytest.raises(ValueError):
        DatasetSpec.model_validate({**base, "thinking": "mix", "thinkingMix": {"ratio": 1.5}})


def test_a_resume_with_another_mode_is_refused(family_tokenizer_dir, tmp_path):
    def fingerprint(**dataset):
        ds = {"name": "ds", "source": "rows.jsonl", "format": "messages", **dataset}
        job = example_job("qwen3.yaml", family_tokenizer_dir("qwen3"), [ds])
        return dataset_fingerprint(job, job.spec.datasets[0])

    unset = fingerprint()
    assert not any("thinking" in k for k in unset)  # outputs from before keep their fingerprint
    on = fingerprint(thinking="on")
    check_fingerprint(tmp_path, on, has_data=True, next_shard=0, allow_change=False)
    check_fingerprint(tmp_path, on, has_data=True, next_shard=1, allow_change=False)
    for changed in (
        {"thinking": "off"},
        {"thinking": "mix"},
        {"thinking": "mix", "thinkingMix": {"seed": 1}},
    ):
        with pytest.raises(SpecChanged, match=r"spec\.datasets\[ds\]\.thinking"):
            check_fingerprint(
                tmp_path, fingerprint(**changed), has_data=True, next_shard=1, allow_change=False
            )
    assert fingerprint(thinking="mix") == fingerprint(
        thinking="mix", thinkingMix={"ratio": 0.5, "seed": 0}
    )


def test_the_mode_is_written_in_each_record_and_read_back():
    from draftgen.generator.records import generation_record
    from draftgen.generator.sglang.client import Generation
    from draftgen.output.record import Record

    for mode in (True, False, None):
        sample = Sample("ds/a/0", "ds", 0, 0, [1, 2], {}, mode)
        result = Generation([3], "stop", 3, 2, 0, 0.1)
        line = generation_record("ds", sample, result, {}, "http://s", 1, 0.1).to_json()
        assert ("thinking" in line["meta"]) is (mode is not None)
        assert Record.from_json(line).meta.thinking is mode
