"""Reading sources, row numbering, stable identities, turn selection and shuffle order."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from draftgen.generator.rows.identity import row_key, sample_id, select_turns
from draftgen.generator.rows.selection import permutation, select_rows
from draftgen.generator.rows.sources import RowIndex, SourceError, iter_rows, list_files
from draftgen.spec import Selection

from .conftest import write_jsonl


def test_jsonl_rows_are_numbered_across_files_in_name_order_and_bad_lines_become_errors(tmp_path):
    write_jsonl(tmp_path / "b.jsonl", [{"prompt": "b0"}])
    (tmp_path / "a.jsonl").write_bytes(
        b'{"prompt": "a0"}\n\n{"prompt": "a1"\n"just a string"\n{"prompt": "\xff\xfe"}\n{"prompt": "a5"}'
    )
    (tmp_path / "notes.txt").write_text("ignored")
    rows = list(iter_rows(list_files(tmp_path)))
    assert [r.index for r in rows] == [0, 1, 2, 3, 4, 5]  # the blank line is not a row
    assert rows[0].data == {"prompt": "a0"}
    assert rows[1].error[0] == "malformed_json"
    assert rows[2].error[0] == "wrong_type"
    assert rows[3].error[0] == "invalid_utf8"
    assert rows[4].data == {"prompt": "a5"}  # a last line without newline still counts
    assert rows[5].data == {"prompt": "b0"}


def test_parquet_rows_and_jsonl_rows_get_the_same_keys(tmp_path):
    rows = [
        {"prompt": "p0", "system": None},
        {"prompt": "p1", "system": "s"},
        {"prompt": "p2", "system": None},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "d.parquet", row_group_size=2)
    write_jsonl(
        tmp_path / "j" / "d.jsonl",
        [{"prompt": "p0"}, {"prompt": "p1", "system": "s"}, {"prompt": "p2"}],
    )
    from_parquet = list(iter_rows([tmp_path / "d.parquet"]))
    from_jsonl = list(iter_rows([tmp_path / "j" / "d.jsonl"]))
    assert [r.data["prompt"] for r in from_parquet] == ["p0", "p1", "p2"]
    assert [row_key(r.data) for r in from_parquet] == [row_key(r.data) for r in from_jsonl]


@pytest.mark.parametrize("cache_bytes", [1, 1 << 30])  # evicting every group, or none
def test_row_index_reads_any_row_of_jsonl_and_parquet(tmp_path, monkeypatch, cache_bytes):
    import draftgen.generator.rows.sources as sources

    monkeypatch.setattr(sources, "ROW_GROUP_CACHE_BYTES", cache_bytes)
    pq.write_table(
        pa.Table.from_pylist([{"prompt": f"q{i}"} for i in range(5)]),
        tmp_path / "b.parquet",
        row_group_size=2,
    )
    write_jsonl(tmp_path / "a.jsonl", [{"prompt": f"j{i}"} for i in range(3)])
    files = list_files(tmp_path)
    index = RowIndex(files)
    assert len(index) == 8
    sequential = list(iter_rows(files))
    for i in (7, 0, 4, 2, 3, 5, 6, 7):
        assert index.read(i) == sequential[i]


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda d: d / "missing.jsonl", "no such file"),
        (
            lambda d: (d / "empty").mkdir() or d / "empty",
            "no .jsonl, .parquet, .csv or .arrow files",
        ),
        (lambda d: (d / "x.txt").write_text("a,b") and d / "x.txt", "not a JSONL"),
        (
            lambda d: (d / "x.parquet").write_bytes(b"nope") and d / "x.parquet",
            "not a readable Parquet",
        ),
    ],
)
def test_unreadable_sources_are_clear_errors(tmp_path, setup, message):
    with pytest.raises(SourceError, match=message):
        files = list_files(setup(tmp_path))
        list(iter_rows(files))


def test_row_key_prefers_explicit_ids_and_otherwise_hashes_canonical_content():
    assert row_key({"id": "abc", "prompt": "x"}) == "abc"
    assert row_key({"uuid": 17, "prompt": "x"}) == "17"
    a = row_key({"prompt": "x", "system": "y"})
    assert a == row_key({"system": "y", "prompt": "x", "extra": None})  # key order, nulls
    assert a != row_key({"prompt": "x", "system": "z"})
    assert len(a) == 32
    assert len(row_key({"id": "", "prompt": "x"})) == 32  # an empty id is no id: hashed
    assert sample_id("ds", "abc", 2) == "ds/abc/2"


def test_identity_survives_file_reordering(tmp_path):
    rows = [{"prompt": f"p{i}"} for i in range(6)] + [{"id": "named", "prompt": "n"}]
    write_jsonl(tmp_path / "one" / "d.jsonl", rows)
    write_jsonl(tmp_path / "two" / "a.jsonl", rows[4:][::-1])
    write_jsonl(tmp_path / "two" / "b.jsonl", rows[:4][::-1])

    def keys(d: Path) -> dict[str, str]:
        return {r.data["prompt"]: row_key(r.data) for r in iter_rows(list_files(d))}

    assert keys(tmp_path / "one") == keys(tmp_path / "two")


CONV = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u0"},
    {"role": "assistant", "content": "a0"},
    {"role": "user", "content": "u1"},
    {"role": "assistant", "content": "a1"},
]


def test_turns_last_regenerates_the_final_assistant_turn():
    [(turn, prompt)] = select_turns(CONV, "last")
    assert turn == 1 and prompt == CONV[:4]


def test_turns_last_on_a_conversation_ending_with_a_user_turn_is_the_next_turn():
    conv = CONV + [{"role": "user", "content": "u2"}]
    assert list(select_turns(conv, "last")) == [(2, conv)]


def test_turns_all_gives_each_assistant_turn_with_the_history_as_given():
    conv = CONV + [{"role": "user", "content": "u2"}]
    got = list(select_turns(conv, "all"))
    assert [t for t, _ in got] == [0, 1, 2]
    assert got[0][1] == CONV[:2] and got[1][1] == CONV[:4] and got[2][1] == conv
    assert got[1][1][2]["content"] == "a0"  # the given answer, not a regenerated one


def test_shuffle_is_a_seeded_permutation_the_same_every_run():
    a = list(permutation(1000, 7))
    assert a == list(permutation(1000, 7))
    assert sorted(a) == list(range(1000)) and a != list(range(1000))
    assert a != list(permutation(1000, 8))
    assert list(permutation(0, 1)) == [] and list(permutation(1, 1)) == [0]


def test_shuffle_selection_streams_rows_in_that_order_and_a_prefix_is_a_random_subset(tmp_path):
    write_jsonl(tmp_path / "d.jsonl", [{"prompt": f"p{i}"} for i in range(200)])
    files = list_files(tmp_path)
    shuffled = [r.index for r in select_rows(files, Selection(mode="shuffle", seed=3))]
    assert shuffled == list(permutation(200, 3))
    first = shuffled[:20]
    assert max(first) > 100  # a subset drawn from the whole file, not its head
    again = select_rows(files, Selection(mode="shuffle", seed=3))
    assert [next(again).data["prompt"] for _ in range(20)] == [f"p{i}" for i in first]
    assert [r.index for r in select_rows(files, Selection())] == list(range(200))
