"""Bad dataset rows thrown at the input side by a fuzzer: every row comes out as a valid sample or
a reject with a reason, the stream never raises, and no row is silently lost.

Rows are raw JSONL lines (bytes), so invalid UTF-8 and malformed JSON reach the reader exactly
as a corrupt file would. The real tokenizer path renders every conversation that parses."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from draftgen.generator.inputs import iter_samples, open_tokenizer
from draftgen.generator.samples import Reject, Sample
from draftgen.spec import parse_job
from tests.jobs import job_document

THINK = 163606
VOCAB = 163_840
MAX_PROMPT = 2048
KNOWN_REASONS = {
    "invalid_utf8",
    "malformed_json",
    "wrong_type",
    "missing_field",
    "empty_conversation",
    "unknown_role",
    "bad_tools",
    "bad_tool_call",
    "template_error",
    "prompt_too_long",
    "duplicate_id",
    "empty_prompt",
    "bad_token_id",
    "missing_generation_prefix",
    "tools_missing",
}

# ---- strategies ------------------------------------------------------------------------------

json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

roles = st.one_of(
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.sampled_from(["human", "gpt", "bot", "function", "", "USER", "developer"]),
    json_value,
)
content = st.one_of(
    st.text(max_size=60),
    st.none(),
    st.integers(),
    st.lists(
        st.one_of(
            st.text(max_size=10),
            st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}),
            st.fixed_dictionaries({"type": st.just("image_url")}),
            json_value,
        ),
        max_size=3,
    ),
    json_value,
)
tool_def = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("function"),
            "function": st.fixed_dictionaries(
                {
                    "name": st.one_of(
                        st.text(string.ascii_letters, min_size=1, max_size=10), json_value
                    )
                },
                optional={
                    "description": st.one_of(st.text(max_size=20), json_value),
                    "parameters": st.one_of(
                        st.fixed_dictionaries(
                            {
                                "type": st.just("object"),
                                "properties": st.dictionaries(
                                    st.text(string.ascii_letters, min_size=1, max_size=5),
                                    st.fixed_dictionaries(
                                        {"type": st.sampled_from(["string", "integer"])}
                                    ),
                                    max_size=2,
                                ),
                            }
                        ),
                        json_value,
                    ),
                },
            ),
        }
    ),
    st.text(max_size=30),  # a JSON string that may not parse
    json_value,
)
tool_call = st.one_of(
    st.fixed_dictionaries(
        {
            "id": st.text(max_size=6),
            "type": st.just("function"),
            "function": st.fixed_dictionaries(
                {
                    "name": st.one_of(st.text(string.ascii_letters, max_size=8), json_value),
                    "arguments": st.one_of(st.text(max_size=20), json_value),
                }
            ),
        }
    ),
    json_value,
)
message = st.one_of(
    st.fixed_dictionaries(
        {"role": roles, "content": content},
        optional={
            "tool_calls": st.lists(tool_call, max_size=2),
            "tool_call_id": json_value,
            "name": json_value,
            "reasoning_content": json_value,
        },
    ),
    json_value,
)
messages_row = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.text(max_size=5), st.integers(0, 5), json_value),
        "messages": st.one_of(
            st.lists(message, max_size=5), json_value, st.just([]), st.text(max_size=20)
        ),
        "tools": st.one_of(st.lists(tool_def, max_size=3), tool_def),
    },
)
sharegpt_row = st.fixed_dictionaries(
    {},
    optional={
        "conversations": st.one_of(
            st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={"from": roles, "value": content, "role": roles, "content": content},
                ),
                max_size=5,
            ),
            json_value,
        ),
        "system": json_value,
        "tools": st.one_of(st.lists(tool_def, max_size=2), tool_def),
    },
)
prompt_row = st.fixed_dictionaries(
    {}, optional={"prompt": st.one_of(st.text(max_size=40), json_value), "system": json_value}
)
glaive_row = st.fixed_dictionaries(
    {},
    optional={
        "system": st.one_of(
            st.just('SYSTEM: You are helpful. {"name": "f", "parameters": {}}'),
            st.text(max_size=40),
            json_value,
        ),
        "chat": st.one_of(
            st.just(
                'USER: hi <|endoftext|> ASSISTANT: <functioncall> {"name": "f", '
                "\"arguments\": '{}'} <|endoftext|>"
            ),
            st.text(max_size=60),
            json_value,
        ),
    },
)
pretokenized_row = st.fixed_dictionaries(
    {},
    optional={
        "input_ids": st.one_of(
            st.lists(st.integers(-5, VOCAB + 5), max_size=8),
            st.lists(json_scalar, max_size=4),
            json_value,
        )
    },
)

# Well-shaped rows (now and then an unknown speaker) with arbitrary text (any Unicode, lone surrogates included: JSON can carry
# "\ud800", which no tokenizer can encode).
any_text = st.one_of(
    st.text(max_size=40),
    st.text(st.characters(codec=None), max_size=10),
    st.just("\ud800 lone surrogate"),
)
GOOD_ROWS = {
    "messages": st.lists(
        st.fixed_dictionaries(
            {
                "role": st.sampled_from(["user", "assistant", "system"] * 3 + ["developer"]),
                "content": any_text,
            }
        ),
        min_size=1,
        max_size=4,
    ).flatmap(
        lambda m: st.fixed_dictionaries(
            {"messages": st.sampled_from([m + [{"role": "user", "content": "?"}], m])},
            optional={"tools": st.lists(tool_def, min_size=1, max_size=2)},
        )
    ),
    "sharegpt": st.lists(
        st.fixed_dictionaries(
            {
                "from": st.sampled_from(["human", "gpt", "human", "gpt", "narrator"]),
                "value": any_text,
            }
        ),
        min_size=1,
        max_size=4,
    ).map(lambda c: {"conversations": c + [{"from": "human", "value": "?"}]}),
    "prompt": any_text.filter(str.strip).map(lambda t: {"prompt": t}),
    "glaive": any_text.map(
        lambda t: {"system": "SYSTEM: You are helpful.", "chat": f"USER: {t} <|endoftext|>"}
    ),
    "pretokenized": st.lists(st.integers(0, VOCAB - 1), min_size=1, max_size=8).map(
        lambda ids: {"input_ids": ids}
    ),
}

ROWS = {
    "messages": messages_row,
    "sharegpt": sharegpt_row,
    "prompt": prompt_row,
    "glaive": glaive_row,
    "pretokenized": pretokenized_row,
}


def lines_for(fmt: str) -> st.SearchStrategy[bytes]:
    """One JSONL line of any kind of damage, or a well-shaped row of the format."""
    as_json = ROWS[fmt].map(lambda r: json.dumps(r).encode())
    good = GOOD_ROWS[fmt].map(lambda r: json.dumps(r).encode())
    any_json = json_value.map(lambda v: json.dumps(v).encode())  # wrong types
    invalid_utf8 = (
        st.binary(min_size=1, max_size=20)
        .filter(_not_utf8)
        .map(lambda b: b'{"prompt": "' + b + b'"}')
    )
    truncated = as_json.filter(lambda b: len(b) > 2).map(lambda b: b[: len(b) // 2])
    garbage = st.text(min_size=1, max_size=30).map(str.encode)
    deep = st.integers(5_000, 20_000).map(lambda n: b"[" * n + b"]" * n)  # past the parser's depth
    return st.one_of(good, as_json, as_json, any_json, invalid_utf8, truncated, garbage, deep).map(
        lambda b: b.replace(b"\n", b" ").replace(b"\r", b" ")
    )


def _not_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


COMMON = {"invalid_utf8", "malformed_json", "wrong_type"}
EXPECTED = {
    "messages": COMMON
    | {"sample", "missing_field", "unknown_role", "empty_conversation", "bad_tools"},
    "sharegpt": COMMON | {"sample", "missing_field", "unknown_role", "empty_conversation"},
    "prompt": COMMON | {"sample", "missing_field", "empty_conversation"},
    "glaive": COMMON | {"sample", "missing_field"},
    "pretokenized": COMMON | {"sample", "missing_field", "bad_token_id"},
}

_COMMON_LINES = [b'{"x": "caf\xc3\xa9 \xff"}', b'{"unterminated": ', b"[1, 2, 3]"]
SEEN_DOORS = {
    "messages": _COMMON_LINES
    + [
        b'{"messages": [{"role": "user", "content": "hi"}]}',
        b'{"other": 1}',
        b'{"messages": [{"role": "wizard", "content": "x"}]}',
        b'{"messages": []}',
        b'{"messages": [{"role": "user", "content": "hi"}], "tools": [{"description": "no name"}]}',
    ],
    "sharegpt": _COMMON_LINES
    + [
        b'{"conversations": [{"from": "human", "value": "hi"}]}',
        b'{"other": 1}',
        b'{"conversations": [{"from": "narrator", "value": "x"}]}',
        b'{"conversations": []}',
    ],
    "prompt": _COMMON_LINES + [b'{"prompt": "hi"}', b'{"other": 1}', b'{"prompt": "  "}'],
    "glaive": _COMMON_LINES
    + [b'{"system": "SYSTEM: hi", "chat": "USER: hi <|endoftext|>"}', b'{"other": 1}'],
    "pretokenized": _COMMON_LINES
    + [b'{"input_ids": [1, 2]}', b'{"other": 1}', b'{"input_ids": [-1]}'],
}

# ---- harness ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def contexts(kimi_like_tokenizer, tmp_path_factory):
    """One tokenizer context per format (opened once: loading a tokenizer is the slow part)."""
    base = tmp_path_factory.mktemp("rows")
    out = {}
    for fmt in ROWS:
        job = parse_job(
            job_document(
                "fuzz",
                model={
                    "weights": str(kimi_like_tokenizer),
                    "chatTemplateKwargs": {"thinking": True},
                    "generationPrefix": "<think>",
                    "specialTokens": ["<think>", "</think>"],
                },
                datasets=[{"name": "d", "source": f"{fmt}.jsonl", "format": fmt}],
            )
        )
        (base / f"{fmt}.jsonl").write_text('{"prompt": "warm-up"}\n')
        ctx = open_tokenizer(job, base, workers=0).__enter__()
        # The first tool-bearing and prefix-checked rows are strict (refusal to start): pass
        # them with good rows so the fuzzed rows meet the per-row checks.
        out[fmt] = (job, ctx)
    yield base, out
    for _, ctx in out.values():
        ctx.close()


def run_rows(base: Path, job, ctx, fmt: str, lines: list[bytes]) -> list[Sample | Reject]:
    path = base / f"{fmt}.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return list(
        iter_samples(
            job,
            job.spec.datasets[0],
            base_dir=base,
            tokenizer_ctx=ctx,
            max_prompt_tokens=MAX_PROMPT,
        )
    )


def check_items(items: list[Sample | Reject], lines: list[bytes]) -> None:
    rows = [i for i, line in enumerate(lines) if line.strip()]
    seen = {item.source_index for item in items}
    assert seen == set(range(len(rows))), "a row vanished without a sample or a reject"
    for item in items:
        if isinstance(item, Reject):
            assert item.reason in KNOWN_REASONS, item
            assert isinstance(item.detail, str) and item.detail, item
        else:
            assert isinstance(item, Sample)
            assert item.input_ids and all(type(t) is int and 0 <= t < VOCAB for t in item.input_ids)
            assert len(item.input_ids) <= MAX_PROMPT
            if not (item.info or {}).get("pretokenized"):
                assert item.input_ids[-1] == THINK  # the generation prefix, as the template adds it


# The first STRICT_TOOL_SAMPLES rendered prompts (and tool-bearing prompts) are integrity probes
# that refuse to start instead of rejecting: lead every fuzzed file with good rows.
def _lead(fmt: str) -> list[bytes]:
    good = {
        "messages": {
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "lead_tool", "parameters": {"type": "object"}},
                }
            ],
        },
        "sharegpt": {
            "conversations": [{"from": "human", "value": "hi"}],
            "tools": [{"name": "lead_tool", "parameters": {"type": "object"}}],
        },
        "prompt": {"prompt": "hi"},
        "glaive": {
            "system": 'SYSTEM: You are helpful. {"name": "lead_tool", "parameters": {}}',
            "chat": "USER: hi <|endoftext|>",
        },
        "pretokenized": {"input_ids": [1, 2, 3]},
    }[fmt]
    from draftgen.generator.integrity import STRICT_TOOL_SAMPLES

    return [json.dumps({**good, "id": f"lead{i}"}).encode() for i in range(STRICT_TOOL_SAMPLES + 1)]


@pytest.mark.parametrize("fmt", list(ROWS))
def test_fuzzed_rows_become_samples_or_rejects(fmt, contexts):
    base, ctxs = contexts
    job, ctx = ctxs[fmt]
    lead = _lead(fmt)
    reasons: set[str] = set()

    @settings(
        max_examples=80,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.lists(lines_for(fmt), min_size=1, max_size=6))
    @example(SEEN_DOORS[fmt])  # one of each reason for sure; the fuzzer adds the variety
    def prop(lines):
        lines = lead + lines
        items = run_rows(base, job, ctx, fmt, lines)
        check_items(items, lines)
        reasons.update(getattr(i, "reason", "sample") for i in items[len(lead) :])
        # Rejects are deterministic: a resumed run records the same ones (the writer dedups).
        again = run_rows(base, job, ctx, fmt, lines)
        assert [(i.source_index, getattr(i, "reason", None), i.id) for i in again] == [
            (i.source_index, getattr(i, "reason", None), i.id) for i in items
        ]

    prop()
    # The fuzzer reached every door (a property over only good rows would prove nothing).
    assert EXPECTED[fmt] <= reasons, EXPECTED[fmt] - reasons


@pytest.mark.parametrize("fmt", ["messages", "sharegpt"])
def test_enormous_and_empty_conversations(fmt, contexts):
    base, ctxs = contexts
    job, ctx = ctxs[fmt]
    key, speaker, text = (
        ("messages", "role", "content") if fmt == "messages" else ("conversations", "from", "value")
    )
    user = "user" if fmt == "messages" else "human"
    lines = _lead(fmt) + [
        json.dumps(row).encode()
        for row in [
            {key: []},
            {key: [{speaker: "system", text: "only a system turn"}]},
            {key: [{speaker: user, text: "x" * 200_000}]},  # one enormous turn
            {key: [{speaker: user, text: f"turn {i}"} for i in range(3_000)]},  # thousands of turns
            {key: [{speaker: user, text: ""}]},
        ]
    ]
    items = run_rows(base, job, ctx, fmt, lines)
    check_items(items, lines)
    n = len(_lead(fmt))
    by_row = {i.source_index: i for i in items if i.source_index >= n}
    assert by_row[n].reason == "empty_conversation"
    assert by_row[n + 1].reason == "empty_conversation"
    assert by_row[n + 2].reason == "prompt_too_long" and "at most 2048" in by_row[n + 2].detail
    assert by_row[n + 3].reason == "prompt_too_long"
    assert isinstance(by_row[n + 4], Sample)  # an empty user message is still a question
