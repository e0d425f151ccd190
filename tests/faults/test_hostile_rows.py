"""Hostile rows in every format, from JSONL and from Parquet: a 5,000-digit integer, a value nested
deeper than anything real (as the row itself and inside a JSON string the row carries: tools, tool
call arguments, a messages list, Glaive's function definitions and calls), and a Parquet file
with a damaged page. Each becomes a reject with a reason (the damaged region one reject per row
of its row group, naming the file and the group's byte offset) and the rows after it are still
read: the job goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from draftgen.generator.prompts.inputs import iter_samples
from draftgen.generator.prompts.integrity import STRICT_TOOL_SAMPLES
from draftgen.generator.prompts.samples import Reject, Sample
from tests.jobs import dataset

from .input_contexts import input_contexts

BIG = "9" * 5000  # past Python's 4,300-digit int conversion limit
FORMATS = ("messages", "sharegpt", "prompt", "glaive", "pretokenized")


def deep(n: int = 600) -> str:
    """JSON nested `n` levels: the parser takes it, later steps that walk the row would not."""
    return "[" * n + "]" * n


def _good(fmt: str, n: int) -> dict[str, Any]:
    text = f"question {n}"
    return {
        "messages": {"id": f"r{n}", "messages": [{"role": "user", "content": text}]},
        "sharegpt": {"id": f"r{n}", "conversations": [{"from": "human", "value": text}]},
        "prompt": {"id": f"r{n}", "prompt": text},
        "glaive": {"id": f"r{n}", "system": "SYSTEM: You are helpful.", "chat": f"USER: {text}"},
        "pretokenized": {"id": f"r{n}", "input_ids": [1, 2, n + 3]},
    }[fmt]


def _call(arguments: str) -> str:
    return "USER: hi\n\nASSISTANT: <functioncall> " + arguments + " <|endoftext|>"


def _tools_text(value: str) -> str:
    return '[{"name": "f", "parameters": {"type": "object", "default": ' + value + "}}]"


# (format, kind, JSONL line of the bad row, reason). The line-level cases cannot be Parquet rows
# (Parquet has no 5,000-digit integers and refuses schemas past 100 levels as a whole file).
JSONL_CASES: list[tuple[str, str, str, str]] = [
    *[
        (fmt, "big_int", json.dumps(_good(fmt, 0))[:-1] + ', "n": ' + BIG + "}", "malformed_json")
        for fmt in FORMATS
    ],
    *[
        (fmt, "deep", json.dumps(_good(fmt, 0))[:-1] + ', "n": ' + deep() + "}", "malformed_json")
        for fmt in FORMATS
    ],
    ("pretokenized", "big_int_id", '{"input_ids": [1, ' + BIG + "]}", "malformed_json"),
    (
        "messages",
        "deep_tools",
        '{"messages": [{"role": "user", "content": "hi"}], "tools": ' + _tools_text(deep()) + "}",
        "malformed_json",
    ),
]

# Bad values inside JSON strings a row carries: the same in JSONL and in Parquet (string columns).
_MSG = [{"role": "user", "content": "hi"}]
STRING_CASES: list[tuple[str, str, dict[str, Any], str]] = []
for _kind, _value in (("big_int", BIG), ("deep", deep())):
    STRING_CASES += [
        (
            "messages",
            f"tools_{_kind}",
            {"messages": _MSG, "tools": _tools_text(_value)},
            "bad_tools",
        ),
        (
            "messages",
            f"arguments_{_kind}",
            {
                "messages": _MSG
                + [
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"function": {"name": "f", "arguments": '{"a": ' + _value + "}"}}
                        ],
                    },
                    {"role": "user", "content": "?"},
                ]
            },
            "bad_tool_call",
        ),
        (
            "messages",
            f"messages_string_{_kind}",
            {"messages": '[{"role": "user", "content": "hi", "x": ' + _value + "}]"},
            "wrong_type",
        ),
        (
            "sharegpt",
            f"tools_{_kind}",
            {"conversations": [{"from": "human", "value": "hi"}], "tools": _tools_text(_value)},
            "bad_tools",
        ),
        (
            "sharegpt",
            f"function_call_{_kind}",
            {
                "conversations": [
                    {"from": "human", "value": "hi"},
                    {
                        "from": "function_call",
                        "value": '{"name": "f", "arguments": ' + _value + "}",
                    },
                    {"from": "human", "value": "?"},
                ]
            },
            "bad_tool_call",
        ),
        (
            "glaive",
            f"system_{_kind}",
            {
                "system": 'SYSTEM: You are helpful. {"name": "f", "parameters": ' + _value + "}",
                "chat": "USER: hi",
            },
            "bad_tools",
        ),
        (
            "glaive",
            f"call_{_kind}",
            {
                "system": "SYSTEM: hi",
                "chat": _call('{"name": "f", "arguments": \'{"a": ' + _value + "}'}"),
            },
            "bad_tool_call",
        ),
    ]


@pytest.fixture(scope="module")
def contexts(kimi_like_tokenizer, tmp_path_factory):
    """Per format a job with a JSONL dataset `j`, a Parquet dataset `p` and the same Parquet file
    shuffled (`s`, read by row index), and its tokenizer."""
    base = tmp_path_factory.mktemp("hostile")

    def datasets(fmt: str) -> list[dict]:
        return [
            dataset("j", f"{fmt}.jsonl", fmt),
            dataset("p", f"{fmt}.parquet", fmt),
            dataset("s", f"{fmt}.parquet", fmt, selection={"mode": "shuffle", "seed": 7}),
        ]

    with input_contexts("hostile", kimi_like_tokenizer, base, FORMATS, datasets) as out:
        yield base, out


def _lead(fmt: str) -> list[dict[str, Any]]:
    # The first STRICT_TOOL_SAMPLES prompts are integrity probes (refusal to start): good rows.
    return [_good(fmt, 1000 + i) for i in range(STRICT_TOOL_SAMPLES + 1)]


def _items(contexts, fmt: str, dataset: int) -> list[Sample | Reject]:
    base, ctxs = contexts
    job, ctx = ctxs[fmt]
    return list(
        iter_samples(
            job,
            job.spec.datasets[dataset],
            base_dir=base,
            tokenizer_ctx=ctx,
            max_prompt_tokens=2048,
        )
    )


def _check(items: list[Sample | Reject], bad: range, total: int, reason: str) -> list[Reject]:
    by_row: dict[int, list[Sample | Reject]] = {}
    for item in items:
        by_row.setdefault(item.source_index, []).append(item)
    assert sorted(by_row) == list(range(total)), "a row vanished"
    rejects = []
    for index in range(total):
        (item,) = by_row[index]
        if index in bad:
            assert isinstance(item, Reject), item
            assert item.reason == reason and item.detail, item
            rejects.append(item)
        else:
            assert isinstance(item, Sample), item  # the rows after the bad one: the job goes on
    return rejects


@pytest.mark.parametrize(
    ("fmt", "kind", "line", "reason"), JSONL_CASES, ids=lambda v: v if len(str(v)) < 30 else ""
)
def test_jsonl_line_of_each_kind_is_a_reject(contexts, fmt, kind, line, reason):
    base, _ = contexts
    lead = [json.dumps(r) for r in _lead(fmt)]
    lines = [*lead, line, json.dumps(_good(fmt, 1))]
    (base / f"{fmt}.jsonl").write_text("\n".join(lines) + "\n")
    (reject,) = _check(
        _items(contexts, fmt, 0), range(len(lead), len(lead) + 1), len(lines), reason
    )
    assert "nested" in reject.detail or "digits" in reject.detail


def _write_parquet(path: Path, groups: list[list[dict[str, Any]]]) -> None:
    """Each list of rows its own row group; every row gets every column (missing ones null)."""
    columns = sorted({k for rows in groups for row in rows for k in row})
    tables = [
        pa.Table.from_pylist([{k: row.get(k) for k in columns} for row in rows]) for rows in groups
    ]
    schema = pa.unify_schemas([t.schema for t in tables])
    with pq.ParquetWriter(path, schema, compression="snappy") as writer:
        for table in tables:
            writer.write_table(table.cast(schema))


def _as_strings(row: dict[str, Any]) -> dict[str, Any]:
    # Parquet rows hold nested lists as JSON strings here, so every row shares one schema.
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in row.items()}


@pytest.mark.parametrize(
    ("fmt", "kind", "row", "reason"), STRING_CASES, ids=[f"{c[0]}-{c[1]}" for c in STRING_CASES]
)
@pytest.mark.parametrize("container", ["jsonl", "parquet"])
def test_bad_json_inside_a_field_is_a_reject(contexts, container, fmt, kind, row, reason):
    base, _ = contexts
    rows = [*_lead(fmt), row, _good(fmt, 1)]
    bad = range(len(rows) - 2, len(rows) - 1)
    if container == "jsonl":
        (base / f"{fmt}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        items = _items(contexts, fmt, 0)
    else:
        if fmt in ("messages", "sharegpt"):  # nested fields as JSON strings: one schema for all
            rows = [_as_strings(r) for r in rows]
        _write_parquet(base / f"{fmt}.parquet", [rows])
        items = _items(contexts, fmt, 1)
    (reject,) = _check(items, bad, len(rows), reason)
    assert "digits" in reject.detail or "nested" in reject.detail, reject


def _damage_group(path: Path, group: int) -> int:
    """Overwrite the first page header of a row group's first column; its byte offset."""
    column = pq.ParquetFile(path).metadata.row_group(group).column(0)
    offset = column.dictionary_page_offset or column.data_page_offset
    data = bytearray(path.read_bytes())
    data[offset : offset + 32] = b"\xff" * 32
    path.write_bytes(bytes(data))
    return offset


@pytest.mark.parametrize("selection", ["sequential", "shuffle"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_damaged_parquet_page_rejects_its_row_group(contexts, fmt, selection):
    base, ctxs = contexts
    lead = _lead(fmt)
    damaged = [_good(fmt, n) for n in range(5)]
    tail = [_good(fmt, n) for n in range(5, 9)]
    path = base / f"{fmt}.parquet"
    _write_parquet(path, [lead, damaged, tail])
    offset = _damage_group(path, 1)
    items = _items(contexts, fmt, 1 if selection == "sequential" else 2)
    bad = range(len(lead), len(lead) + len(damaged))
    rejects = _check(items, bad, len(lead) + len(damaged) + len(tail), "unreadable_row_group")
    for reject in rejects:
        assert str(path) in reject.detail
        assert f"row group 1 (byte offset {offset}, 5 rows)" in reject.detail


@pytest.mark.parametrize("selection", ["sequential", "shuffle"])
def test_a_damaged_first_row_group_is_rejects_and_the_other_groups_are_read(contexts, selection):
    """The first group damaged (more rows than the preflight reads): its rows are rejects naming
    group 0, the later groups are samples, and `generate`'s preflight lets the job start."""
    from draftgen.generator.prompts.input_preflight import check_inputs

    base, ctxs = contexts
    fmt = "prompt"
    damaged = [_good(fmt, n) for n in range(40)]
    rest = [*_lead(fmt), *(_good(fmt, n) for n in range(40, 45))]
    path = base / f"{fmt}.parquet"
    _write_parquet(path, [damaged, rest])
    offset = _damage_group(path, 0)
    items = _items(contexts, fmt, 1 if selection == "sequential" else 2)
    rejects = _check(items, range(40), 40 + len(rest), "unreadable_row_group")
    assert all(f"row group 0 (byte offset {offset}, 40 rows)" in r.detail for r in rejects)
    job, ctx = ctxs[fmt]
    report, code = check_inputs(job, base, ctx, strict=False, datasets=[job.spec.datasets[1]])
    assert report.passed, report
    (checked,) = report.datasets
    assert checked.samples > 0 and "row group 0" in checked.warning
