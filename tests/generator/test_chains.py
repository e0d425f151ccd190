"""On-policy chains (`history: regenerated`) without a server: the spec rule, the fingerprint,
and a chain's step on recorded replies of tiny-kimi's family (Kimi-K2's format) — the next
prompt carries the reply as the template puts it, and a call that differs from the dataset's
ends the chain with its reason."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from draftgen.generator.prompts.chains import (
    ChainResume,
    ChainState,
    ChainSteps,
    chain_row,
    prompt_for,
    step,
)
from draftgen.generator.prompts.inputs import open_tokenizer
from draftgen.generator.prompts.samples import Reject, Sample
from draftgen.output.fingerprint import dataset_fingerprint
from draftgen.spec import DatasetSpec, load_job

from .gen_helpers import WEATHER_TOOL, samples_of, write_job, write_jsonl

CALL = {
    "id": "call_from_the_dataset",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
ROW = {
    "id": "c1",
    "tools": [WEATHER_TOOL],
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "DATASET-CALL-TEXT", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": CALL["id"], "content": "RESULT-18C"},
        {"role": "assistant", "content": "DATASET-ANSWER"},
        {"role": "user", "content": "And tomorrow?"},
    ],
}
# The id a Kimi server gives the conversation's first call; the client's result answers it.
SERVER_ID = "functions.get_weather:0"
# What tiny-kimi's family writes after a prompt ending in `<think>`: reasoning, then the call.
CALLING = (
    "I should look.</think>Checking.<|tool_calls_section_begin|><|tool_call_begin|>"
    'functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
    "<|tool_calls_section_end|><|im_end|>"
)


def test_history_regenerated_needs_turns_all():
    base = {"name": "d", "source": "d.jsonl", "format": "messages"}
    assert DatasetSpec.model_validate(base).history == "dataset"  # today's behaviour
    with pytest.raises(ValidationError, match="history: `regenerated`.*turns: all"):
        DatasetSpec.model_validate({**base, "history": "regenerated"})
    DatasetSpec.model_validate({**base, "history": "regenerated", "turns": "all"})


def test_the_fingerprint_covers_the_history_mode(tmp_path, tiny_kimi):
    ds = {"name": "d", "source": "d.jsonl", "format": "messages", "turns": "all"}
    given = load_job(write_job(tmp_path, tiny_kimi, [ds]))
    regen = load_job(write_job(tmp_path, tiny_kimi, [{**ds, "history": "regenerated"}]))
    before = dataset_fingerprint(given, given.spec.datasets[0])
    after = dataset_fingerprint(regen, regen.spec.datasets[0])
    assert "spec.datasets[d].history" not in before  # outputs written before keep theirs
    assert after["spec.datasets[d].history"] == "regenerated"


@pytest.fixture
def kimi(tmp_path, tiny_kimi):
    """The job (one regenerated `messages` dataset of ROW), its directory and tokenizer context."""
    write_jsonl(tmp_path / "c.jsonl", [ROW])
    ds = {
        "name": "c",
        "source": "c.jsonl",
        "format": "messages",
        "turns": "all",
        "history": "regenerated",
    }
    job = load_job(write_job(tmp_path, tiny_kimi, [ds]))
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        yield job, tmp_path, ctx


def _ids(ctx, text: str) -> list[int]:
    return ctx.tokenizer.encode(text, add_special_tokens=False)


def test_turn_k_plus_1_carries_turn_k_reply_as_the_template_puts_it(kimi):
    job, base, ctx = kimi
    [first] = samples_of(job, ctx, base)
    assert isinstance(first, Sample) and first.turn == 0 and first.id == "c/c1/0"
    steps = ChainSteps(ctx)
    end, nxt = steps.advance(first, _ids(ctx, CALLING), "stop", None)
    assert end is None and isinstance(nxt, Sample)
    assert (nxt.id, nxt.turn, nxt.source_index) == ("c/c1/1", 1, 0)
    text = ctx.tokenizer.decode(nxt.input_ids, skip_special_tokens=False)
    # What a server builds from the client's messages: the reply parsed, re-rendered.
    want = ctx.tokenizer.apply_chat_template(
        [
            ROW["messages"][0],
            {
                "role": "assistant",
                "content": "Checking.",
                "reasoning_content": "I should look.",
                "tool_calls": [{**CALL, "id": SERVER_ID}],
            },
            {**ROW["messages"][2], "tool_call_id": SERVER_ID},
        ],
        tools=[WEATHER_TOOL],
        add_generation_prompt=True,
        tokenize=False,
        thinking=True,
    )
    assert text == want
    assert "Checking." in text and "DATASET-CALL-TEXT" not in text and "RESULT-18C" in text
    # The reply as the template writes it is not the ids the model generated (a production
    # server's view, not a token-level continuation): the template re-renders the message.
    assert "<think>I should look.</think>Checking." in text
    assert "call_from_the_dataset" not in text  # the result answers the server's id

    # Turn 1 answers in text, as the dataset did: the chain goes on to the pending user turn.
    end, last = steps.advance(nxt, _ids(ctx, "Hm.</think>It is 18C.<|im_end|>"), "stop", None)
    assert end is None and isinstance(last, Sample) and last.turn == 2
    tail = ctx.tokenizer.decode(last.input_ids, skip_special_tokens=False)
    assert "It is 18C." in tail and "DATASET-ANSWER" not in tail and "And tomorrow?" in tail
    end, done = steps.advance(last, _ids(ctx, "x<|im_end|>"), "stop", None)
    assert (end, done) == ("complete", None)


@pytest.mark.parametrize(
    ("reply", "finish", "end"),
    [
        ("No tools needed.</think>Sunny.<|im_end|>", "stop", "no_tool_call"),
        (CALLING.replace("Paris", "Lyon"), "stop", "tool_call_diverged"),
        (CALLING.replace("get_weather", "get_time"), "stop", "tool_call_diverged"),
        ("thinking and thinking", "length", "length"),
    ],
)
def test_a_reply_that_leaves_the_dataset_ends_the_chain(kimi, reply, finish, end):
    job, base, ctx = kimi
    [first] = samples_of(job, ctx, base)
    assert ChainSteps(ctx).advance(first, _ids(ctx, reply), finish, None) == (end, None)


def test_a_call_where_the_dataset_answered_in_text_is_an_extra_call(kimi):
    job, base, ctx = kimi
    [first] = samples_of(job, ctx, base)
    steps = ChainSteps(ctx)
    _, second = steps.advance(first, _ids(ctx, CALLING), "stop", None)
    assert isinstance(second, Sample)
    assert steps.advance(second, _ids(ctx, CALLING), "stop", None) == ("extra_tool_call", None)


def test_a_next_prompt_too_long_ends_the_chain_as_a_reject(kimi):
    job, base, ctx = kimi
    [first] = samples_of(job, ctx, base)
    end, nxt = ChainSteps(ctx).advance(first, _ids(ctx, CALLING), "stop", 10)
    assert end == "prompt_too_long" and isinstance(nxt, Reject) and nxt.id == "c/c1/1"


def test_resume_rebuilds_the_next_prompt_from_the_written_output_ids(kimi):
    job, base, ctx = kimi
    [first] = samples_of(job, ctx, base)
    _, live = ChainSteps(ctx).advance(first, _ids(ctx, CALLING), "stop", None)
    written = {0: (first.input_ids[-32:], _ids(ctx, CALLING))}
    [resumed] = samples_of(
        job, ctx, base, skip_ids={"c/c1/0"}, chains=ChainResume({"c/c1": written}, set())
    )
    assert isinstance(resumed, Sample) and isinstance(live, Sample)
    assert (resumed.id, resumed.input_ids) == (live.id, live.input_ids)
    # An ended chain is not taken up again.
    assert samples_of(job, ctx, base, skip_ids={"c/c1/0"}, chains=ChainResume({}, {"c/c1"})) == []


def test_prompt_for_replaces_only_the_regenerated_turns():
    row = chain_row("d/k", ROW["messages"], None)
    assert row.positions == (1, 3, 5) and row.turns == 3
    mine = {"role": "assistant", "content": "mine"}
    state = ChainState(row, (mine,))
    assert prompt_for(state) == [ROW["messages"][0], mine, ROW["messages"][2]]
    assert step(row, 2, object(), "length").end == "complete"  # type: ignore[arg-type]


def test_qwen3_drops_the_earlier_replys_reasoning_as_its_template_does(tmp_path):
    """Qwen3's template keeps reasoning only after the last user query: the chain's next prompt
    (after a new user turn) carries the reply's content without its reasoning."""
    from draftgen.testing import families

    model = families.build("qwen3", tmp_path / "qwen3")
    rows = [
        {
            "id": "q",
            "messages": [
                {"role": "user", "content": "One?"},
                {"role": "assistant", "content": "DATASET-1"},
                {"role": "user", "content": "Two?"},
                {"role": "assistant", "content": "DATASET-2"},
            ],
        }
    ]
    write_jsonl(tmp_path / "q.jsonl", rows)
    ds = {
        "name": "q",
        "source": "q.jsonl",
        "format": "messages",
        "turns": "all",
        "history": "regenerated",
    }
    extra = {
        "chatTemplateKwargs": {"enable_thinking": True},
        "specialTokens": [],
        "generationPrefix": "<|im_start|>assistant\n",
    }
    job = load_job(write_job(tmp_path, model, [ds], model_extra=extra))
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        [first] = samples_of(job, ctx, tmp_path)
        assert isinstance(first, Sample)
        reply = "<think>\nQWEN-REASONING\n</think>\n\nQWEN-ANSWER<|im_end|>"
        end, nxt = ChainSteps(ctx).advance(first, _ids(ctx, reply), "stop", None)
        assert end is None and isinstance(nxt, Sample)
        text = ctx.tokenizer.decode(nxt.input_ids, skip_special_tokens=False)
    assert text.endswith(
        "<|im_start|>assistant\nQWEN-ANSWER<|im_end|>\n<|im_start|>user\nTwo?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert "QWEN-REASONING" not in text and "DATASET-1" not in text


def test_a_model_whose_replies_no_parser_reads_is_refused_naming_history(tmp_path):
    """history: regenerated parses the target's replies back: a template of no known family is
    a preflight problem naming the field and the fix, not a crash mid-run."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from draftgen.generator.prompts.input_preflight import check_inputs

    vocab = {"[UNK]": 0, "user": 1, "assistant": 2, "hi": 3, ":": 4}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]")
    tok.chat_template = (
        "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}assistant :{% endif %}"
    )
    tok.save_pretrained(tmp_path / "plain")
    rows = [{"id": "p", "messages": [{"role": "user", "content": "hi"}]}]
    write_jsonl(tmp_path / "p.jsonl", rows)
    ds = {
        "name": "p",
        "source": "p.jsonl",
        "format": "messages",
        "turns": "all",
        "history": "regenerated",
    }
    extra = {"chatTemplateKwargs": {}, "specialTokens": [], "generationPrefix": None}
    job = load_job(write_job(tmp_path, tmp_path / "plain", [ds], model_extra=extra))
    with open_tokenizer(job, tmp_path, workers=0) as ctx:
        report, _ = check_inputs(job, tmp_path, ctx, strict=False)
    [problem] = [d.problem for d in report.datasets if d.problem]
    assert problem.startswith("spec.datasets[p].history: ")
    assert "history: dataset" in problem  # the fix
