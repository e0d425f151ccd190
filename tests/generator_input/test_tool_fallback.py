"""A template that declares tools in a fallback form is noticed (issue 15, item 4), and the
per-sample tools check costs no decode (item 5).

Kimi-K2.5's tokenizer converts `tools` to its TypeScript-like declaration in Python; a schema its
converter does not handle (a numeric `enum` on a string) makes it print "Failed to convert tools
to TypeScript style" and the template declares the tools as JSON. tiny-kimi-tiktoken does the
same. Each such sample carries `meta.sample.tool_fallback`; `onToolFallback: reject` refuses it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from draftgen.contract import metrics as names
from draftgen.generator.prompts import chat_template
from draftgen.generator.prompts.inputs import iter_samples, open_tokenizer
from draftgen.generator.prompts.samples import TOOL_FALLBACK, Reject, Sample
from draftgen.generator.telemetry.metrics import GeneratorMetrics
from draftgen.output.ledger import Ledger
from draftgen.output.resume import scan_dataset
from draftgen.spec import Budget
from tests.generator.gen_helpers import WEATHER_TOOL, template_ids, write_jsonl

from .conftest import make_job
from .tokenizer_fixture import BODY, GEN, build_tokenizer

REPO = Path(__file__).resolve().parents[2]
TIKTOKEN = REPO / ".cache" / "models" / "tiny-kimi-tiktoken"
FAILED = "Failed to convert tools to TypeScript style"

# A string parameter with a numeric enum: outside Kimi's TypeScript converter.
ODD_TOOL = {
    "type": "function",
    "function": {
        "name": "set_level",
        "description": "Set the level.",
        "parameters": {
            "type": "object",
            "properties": {"level": {"type": "string", "enum": [1, 2, 3]}},
            "required": ["level"],
        },
    },
}


def rows(*tool_sets: list[dict]) -> list[dict]:
    return [
        {"id": f"r{n}", "tools": tools, "messages": [{"role": "user", "content": f"Do {n}."}]}
        for n, tools in enumerate(tool_sets)
    ]


def run(
    tmp_path: Path, data: list[dict], tokenizer: Path, workers: int = 0, **dataset: Any
) -> list[Sample | Reject]:
    write_jsonl(tmp_path / "data.jsonl", data)
    job = make_job(
        tokenizer,
        [{"name": "ds", "source": "data.jsonl", "format": "messages", **dataset}],
        trustRemoteCode=True,
    )
    with open_tokenizer(job, tmp_path, workers=workers) as ctx:
        return list(iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx))


@pytest.fixture
def run_shared(tmp_path, shared_tokenizer):
    """`run` in-process with the session's tokenizer for its location (loaded once)."""

    def go(data: list[dict], tokenizer: Path, **dataset: Any) -> list[Sample | Reject]:
        write_jsonl(tmp_path / "data.jsonl", data)
        job = make_job(
            tokenizer,
            [{"name": "ds", "source": "data.jsonl", "format": "messages", **dataset}],
            trustRemoteCode=True,
        )
        ctx = shared_tokenizer(job, tmp_path)
        return list(iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx))

    return go


@pytest.fixture(scope="module")
def kimi():
    from transformers import AutoTokenizer

    if not (TIKTOKEN / "tiktoken.model").exists():
        pytest.skip("tiny-kimi-tiktoken not built: make models")
    return AutoTokenizer.from_pretrained(str(TIKTOKEN), trust_remote_code=True)


def test_the_fixture_loads_only_as_remote_code_and_falls_back_like_kimi(kimi, capsys):
    from transformers import AutoTokenizer

    with pytest.raises((ValueError, OSError)):
        AutoTokenizer.from_pretrained(str(TIKTOKEN), trust_remote_code=False)
    msgs = [{"role": "user", "content": "hi"}]
    own = kimi.apply_chat_template(msgs, tools=[WEATHER_TOOL], tokenize=False)
    assert capsys.readouterr().out == ""
    assert "type get_weather = (_: {\ncity: string,\n}) => any;" in own
    odd = kimi.apply_chat_template(msgs, tools=[ODD_TOOL], tokenize=False)
    assert FAILED in capsys.readouterr().out
    assert '"name":"set_level"' in odd and "type set_level" not in odd  # compact JSON instead


@pytest.mark.parametrize("workers", [0, 1])
def test_a_fallback_declaration_is_recorded_and_stdout_stays_clean(tmp_path, kimi, capfd, workers):
    data = rows([WEATHER_TOOL], [ODD_TOOL], [WEATHER_TOOL, ODD_TOOL])
    items = run(tmp_path, data, TIKTOKEN, workers=workers)
    assert all(isinstance(i, Sample) for i in items), items
    plain, odd, both = items
    assert TOOL_FALLBACK not in plain.info
    for s in (odd, both):
        assert FAILED in s.info[TOOL_FALLBACK]
    assert FAILED not in capfd.readouterr().out  # captured, not printed over the job's output
    # the prompts are still exactly the tokenizer's own
    for item, row in zip(items, data):
        assert item.input_ids == template_ids(kimi, row["messages"], row["tools"])


def test_on_tool_fallback_reject_refuses_the_sample_with_the_reason(run_shared, kimi):
    items = run_shared(rows([WEATHER_TOOL], [ODD_TOOL]), TIKTOKEN, onToolFallback="reject")
    sample, reject = items
    assert isinstance(sample, Sample)
    assert isinstance(reject, Reject) and reject.reason == TOOL_FALLBACK
    assert FAILED in reject.detail


# A template that declares tools its own way, except those it cannot (here: names starting with
# `json_`), which it writes as JSON without a word: only the declaration's kind shows it.
QUIET_FALLBACK = (
    "{%- if tools -%}<|im_system|>tool_declare<|im_middle|>"
    "{%- if tools[0].function.name.startswith('json_') -%}{{ tools | tojson }}"
    "{%- else -%}{%- for t in tools -%}fn {{ t.function.name }}();{%- endfor -%}{%- endif -%}"
    "<|im_end|>{%- endif -%}" + BODY + GEN
)


def renamed(name: str) -> dict:
    return {**WEATHER_TOOL, "function": {**WEATHER_TOOL["function"], "name": name}}


def test_a_declaration_of_another_kind_than_the_probes_is_a_fallback(tmp_path, capfd):
    tok = build_tokenizer(tmp_path / "quiet", QUIET_FALLBACK)
    items = run(tmp_path, rows([renamed("get_weather")], [renamed("json_lookup")]), tok)
    native, fallback = items
    assert isinstance(native, Sample) and TOOL_FALLBACK not in native.info
    assert isinstance(fallback, Sample)
    assert "declared as json" in fallback.info[TOOL_FALLBACK]
    assert "native" in fallback.info[TOOL_FALLBACK]


def test_a_template_that_always_declares_json_has_no_fallback(run_shared, kimi_like_dir):
    items = run_shared(rows([renamed("get_weather")], [ODD_TOOL]), kimi_like_dir)
    assert all(isinstance(i, Sample) and TOOL_FALLBACK not in i.info for i in items)


# ------------------------------------------------------------- 5. the tools check costs no decode


def test_the_tools_check_never_decodes_and_runs_once_per_distinct_tool_set(
    tmp_path, kimi, monkeypatch
):
    def no_decode(self, ids):
        raise AssertionError("the per-sample tools check decoded the prompt")

    checked: list[str] = []
    check = chat_template.Renderer._check_tool_set

    def counting(self, tools):
        checked.append(chat_template.tool_set_key(tools))
        return check(self, tools)

    monkeypatch.setattr(chat_template.Renderer, "decode", no_decode)
    monkeypatch.setattr(chat_template.Renderer, "_check_tool_set", counting)
    other = renamed("get_time")
    data = rows(*([[WEATHER_TOOL]] * 5 + [[other]] * 3 + [[WEATHER_TOOL, other]] * 2))
    items = run(tmp_path, data, TIKTOKEN)
    assert len(items) == 10 and all(isinstance(i, Sample) for i in items)
    assert len(checked) == len(set(checked)) == 3


def test_a_prompt_that_lacks_its_tools_is_still_caught_without_decoding(
    tmp_path, drops_tools_dir, monkeypatch
):
    from draftgen.generator.prompts.integrity import IntegrityError

    monkeypatch.setattr(chat_template.Renderer, "decode", lambda self, ids: pytest.fail("decoded"))
    write_jsonl(tmp_path / "data.jsonl", rows([WEATHER_TOOL]))
    job = make_job(drops_tools_dir, [{"name": "ds", "source": "data.jsonl", "format": "messages"}])
    match = "does not contain its tools 'get_weather'"
    with (
        open_tokenizer(job, tmp_path, workers=0) as ctx,
        pytest.raises(IntegrityError, match=match),
    ):
        list(iter_samples(job, job.spec.datasets[0], base_dir=tmp_path, tokenizer_ctx=ctx))


# ------------------------------------------------------------------- manifest and counter


def test_fallbacks_are_counted_in_the_manifest_and_the_counter_and_survive_resume(tmp_path):
    shard = tmp_path / "shard-00000.jsonl"
    recs = []
    for n, fallback in enumerate([None, "the tokenizer printed: " + FAILED, None]):
        sample: dict[str, Any] = {"num_tools": 1}
        if fallback:
            sample[TOOL_FALLBACK] = fallback
        recs.append(
            {
                "id": f"ds/r{n}/0",
                "input_ids": [1, 2],
                "output_ids": [3],
                "prompt_tokens": 2,
                "completion_tokens": 1,
                "finish_reason": "stop",
                "meta": {"sample": sample},
            }
        )
    shard.write_text("".join(json.dumps(r) + "\n" for r in recs))
    state = scan_dataset(tmp_path, "ds", Budget(), shard_max_records=100)
    assert state.ledger.tool_fallbacks == 1
    assert state.ledger.manifest().tool_fallbacks == 1
    m = GeneratorMetrics()
    m.start_from(state.ledger)
    m.record(state.ledger, "stop", 2, 1, 0.1, tool_fallback=True)
    m.record(state.ledger, "stop", 2, 1, 0.1)
    value = m.registry.get_sample_value(names.TOOL_FALLBACKS.name, {"dataset": "ds"})
    assert value == 2
    fresh = Ledger("ds", Budget())
    fresh.add(2, 1, "stop", tool_fallback=True)
    assert fresh.manifest().tool_fallbacks == 1
