"""The split by id and the mix: deterministic, stable, and what their options say."""

from __future__ import annotations

import pytest

from draftgen.export.mix import parse_mix, select_by_tokens
from draftgen.export.records import ExportError
from draftgen.export.select import ExportOptions, ExportSummary, export_rows
from draftgen.export.split import split_of

from .builders import synthetic_records, write_output


def _rows(root, **options):
    summary = ExportSummary()
    return [(s, r.id) for s, r in export_rows(root, ExportOptions(**options), summary)], summary


def test_split_fraction_is_close_to_asked_and_stable():
    ids = [f"chat/{i:06d}/0" for i in range(20_000)]
    first = [split_of(i, 0.1, seed=3) for i in ids]
    assert 0.09 < first.count("validation") / len(ids) < 0.11
    assert [split_of(i, 0.1, seed=3) for i in reversed(ids)] == first[::-1]
    assert [split_of(i, 0.1, seed=4) for i in ids] != first


def test_a_sample_keeps_its_split_when_data_is_added(tmp_path):
    small = write_output(tmp_path / "a", {"chat": synthetic_records("chat", 20)})
    large = write_output(tmp_path / "b", {"chat": synthetic_records("chat", 60)})
    before, _ = _rows(small, validation_fraction=0.25, split_seed=9)
    after, _ = _rows(large, validation_fraction=0.25, split_seed=9)
    assert "validation" in {s for s, _ in before}
    assert set(before) <= set(after)


def test_truncated_samples_are_dropped_by_default_and_counted(output_dir):
    rows, summary = _rows(output_dir)
    assert all(
        not i.startswith("chat/row0004") and not i.startswith("chat/row0009") for _, i in rows
    )
    assert summary.datasets["chat"].truncated_dropped == 2
    assert summary.datasets["chat"].samples == 10
    rows, summary = _rows(output_dir, include_truncated=True)
    assert len(rows) == 17 and summary.datasets["chat"].truncated_dropped == 0


def test_weight_mix_keeps_a_stable_subset_and_repeats(tmp_path):
    root = write_output(
        tmp_path / "run",
        {"chat": synthetic_records("chat", 1000), "code": synthetic_records("code", 10)},
    )
    rows, summary = _rows(root, mix=parse_mix(["chat=0.5", "code=2"]))
    chat = [i for _, i in rows if i.startswith("chat/")]
    code = [i for _, i in rows if i.startswith("code/")]
    assert 430 <= len(chat) <= 570 and len(set(chat)) == len(chat)
    assert summary.datasets["chat"].mixed_out == 1000 - len(chat)
    assert len(code) == 20 and len(set(code)) == 10
    again, _ = _rows(root, mix=parse_mix(["chat=0.5", "code=2"]))
    assert again == rows


def test_token_cap_mix_never_exceeds_the_cap(tmp_path):
    root = write_output(tmp_path / "run", {"chat": synthetic_records("chat", 50)})
    rows, summary = _rows(root, mix=parse_mix(["chat=tokens:100"]))
    exported = summary.datasets["chat"].splits["train"].completion_tokens
    assert 0 < exported <= 100
    assert exported > 100 - 12  # filled greedily: no sample of <= 12 tokens was left room
    assert len(rows) == summary.datasets["chat"].exported


def test_token_cap_selection_is_independent_of_order():
    samples = [(f"x/{i}/0", 10 + i % 5) for i in range(100)]
    assert select_by_tokens(samples, 300, 1) == select_by_tokens(samples[::-1], 300, 1)


@pytest.mark.parametrize("bad", ["chat", "chat=", "chat=-1", "chat=tokens:x", "chat=lots"])
def test_bad_mix_is_refused_with_the_syntax(bad):
    with pytest.raises(ExportError, match="--mix"):
        parse_mix([bad])


def test_mix_naming_an_unknown_dataset_lists_the_real_ones(output_dir):
    with pytest.raises(ExportError, match="its datasets are chat, code"):
        _rows(output_dir, mix=parse_mix(["chats=1"]))


def test_cli_refuses_bad_fraction_and_misplaced_flags(output_dir, tmp_path, capsys):
    from draftgen.cli import main

    base = ["export", str(output_dir), "--out", str(tmp_path / "o")]
    assert main([*base, "--format", "parquet", "--validation-fraction", "1.5"]) == 2
    assert "--validation-fraction 1.5" in capsys.readouterr().err
    assert main([*base, "--format", "parquet", "--specforge-text"]) == 2
    assert "--specforge-text goes with --format specforge" in capsys.readouterr().err
    assert main([*base, "--format", "parquet", "--out", str(output_dir / "x")]) == 2
    assert "inside the records directory" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_repeated_copies_stay_in_one_split(tmp_path):
    root = write_output(tmp_path / "run", {"code": synthetic_records("code", 40)})
    rows, _ = _rows(root, mix=parse_mix(["code=2.5"]), validation_fraction=0.5)
    splits: dict[str, set[str]] = {}
    for split, sample_id in rows:
        splits.setdefault(sample_id, set()).add(split)
    assert {len(s) for s in splits.values()} == {1}
    assert {next(iter(s)) for s in splits.values()} == {"train", "validation"}
    assert len(rows) > 2 * 40
