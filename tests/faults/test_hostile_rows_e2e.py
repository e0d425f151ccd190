"""A real `draftgen generate` run (real SGLang server) over hostile rows in JSONL and Parquet
files with a damaged row group (a middle one; the first one, wider than the preflight's rows,
which used to refuse the job): exit 0, each bad row a reject with its reason, every good row —
those after the bad ones included — a sample. Before the fix the first such row ended the run
with a traceback and no records."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from .gen_run import Run, check_consistent, generate_args, rejects, write_job
from .test_hostile_rows import BIG, _damage_group, deep

pytestmark = pytest.mark.sglang

GOOD = '{"id": "g%d", "messages": [{"role": "user", "content": "Say hi %d."}]}'
JSONL: list[tuple[str, str | None]] = [
    (GOOD % (0, 0), None),
    ('{"messages": [{"role": "user", "content": "hi"}], "n": ' + BIG + "}", "malformed_json"),
    ('{"messages": [{"role": "user", "content": "hi"}], "n": ' + deep() + "}", "malformed_json"),
    (
        '{"messages": [{"role": "user", "content": "hi"}], "tools": '
        + json.dumps('[{"name": "f", "parameters": {"a": ' + BIG + "}}]")
        + "}",
        "bad_tools",
    ),
    (GOOD % (1, 1), None),
]


def test_hostile_rows_are_rejects_and_the_job_goes_on(tmp_path, tiny_kimi, sglang_server):
    (tmp_path / "rows.jsonl").write_text("".join(line + "\n" for line, _ in JSONL))
    path = tmp_path / "rows.parquet"
    with pq.ParquetWriter(path, pa.schema([("prompt", pa.string())])) as writer:
        for group in range(3):
            writer.write_table(
                pa.table({"prompt": [f"Name a colour, {group}.{i}." for i in range(3)]})
            )
    _damage_group(path, 1)
    first = tmp_path / "first.parquet"
    with pq.ParquetWriter(first, pa.schema([("prompt", pa.string())])) as writer:
        writer.write_table(pa.table({"prompt": [f"Count to {i}." for i in range(40)]}))
        writer.write_table(pa.table({"prompt": [f"Name a fruit, {i}." for i in range(3)]}))
    _damage_group(first, 0)
    job = write_job(
        tmp_path,
        tiny_kimi,
        [
            {"name": "rows", "source": "rows.jsonl", "format": "messages"},
            {"name": "pq", "source": "rows.parquet", "format": "prompt"},
            {"name": "first", "source": "first.parquet", "format": "prompt"},
        ],
        sampling={"maxNewTokens": 4},
    )
    out = tmp_path / "out"
    code, log = Run(generate_args(job, sglang_server.url, out), tmp_path).finish()
    assert code == 0, log[-3000:]
    assert "Traceback" not in log

    got = {r["source_index"]: r["reason"] for r in rejects(out / "rows")}
    assert got == {i: reason for i, (_, reason) in enumerate(JSONL) if reason}
    pq_rejects = rejects(out / "pq")
    assert {r["source_index"] for r in pq_rejects} == {3, 4, 5}
    assert all(
        r["reason"] == "unreadable_row_group" and "row group 1" in r["detail"] for r in pq_rejects
    )
    first_rejects = rejects(out / "first")
    assert {r["source_index"] for r in first_rejects} == set(range(40))
    assert all("row group 0" in r["detail"] for r in first_rejects)
    assert "row group 0" in log and "the other row groups are read" in log  # the preflight warns
    samples = check_consistent(out, ["rows", "pq", "first"])
    assert sorted(r["source_index"] for r in samples["rows"]) == [0, 4]
    assert sorted(r["source_index"] for r in samples["pq"]) == [0, 1, 2, 6, 7, 8]
    assert sorted(r["source_index"] for r in samples["first"]) == [40, 41, 42]
