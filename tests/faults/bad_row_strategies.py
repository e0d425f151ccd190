"""Hypothesis strategies for tests/faults/test_bad_rows.py: raw JSONL lines (bytes) of each input
format, well-shaped rows with arbitrary text, broken ones of every kind, and per format the
reject reasons the fuzzer must reach (EXPECTED) with one line of each for sure (SEEN_DOORS)."""

from __future__ import annotations

import json
import string

from hypothesis import strategies as st

VOCAB = 163_840  # the Kimi-like tokenizer's: pretokenized rows draw ids around it

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
