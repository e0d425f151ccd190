"""draftgen's exports read by the trainers' own code from PyPI (speculators 0.9, SpecForge 0.2),
each in its own environment as a subprocess (tests/export/trainers.py): the ids and loss masks
the trainer ends up with are draftgen's, token for token."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from draftgen.cli import main
from draftgen.export.records import iter_records
from draftgen.output.record import Record

from .builders import synthetic_records, write_output
from .conftest import TINY_KIMI
from .trainers import rows_of, sequence, specforge_config, specforge_load, speculators_load


def _export(src: Path, fmt: str, out: Path, *extra: str) -> Path:
    args = ["export", str(src), "--format", fmt, "--out", str(out), "--include-truncated"]
    assert main(args + list(extra)) == 0
    return out / "train.jsonl"


def _records(output: Path) -> list[Record]:
    return [r for d in sorted(p for p in output.iterdir() if p.is_dir()) for r in iter_records(d)]


def _loaded(result: dict) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    return [(tuple(r["input_ids"]), tuple(r["loss_mask"])) for r in result["rows"]]


def test_specforge_prompts_path_takes_the_export_as_written(tmp_path):
    """No server and no tokenizer: SpecForge's pre-tokenized path over synthetic records."""
    records = synthetic_records("chat", 9, truncated_every=4)
    src = write_output(tmp_path / "run", {"chat": records})
    train = _export(src, "specforge", tmp_path / "sf")
    longest = max(len(r["input_ids"]) + len(r["output_ids"]) for r in records)
    config = specforge_config(
        tmp_path, TINY_KIMI, {"prompts_path": str(train), "max_length": longest}
    )
    (loaded,) = specforge_load([config], tmp_path)
    assert loaded["mode"] == "online"
    assert _loaded(loaded) == [sequence(r) for r in records]


@pytest.mark.long
def test_specforge_retokenizes_the_conversation_form_with_the_documented_losses(
    kimi, kimi_run, tmp_path
):
    """What docs/export.md says SpecForge does to `--format specforge-conversations`, run with
    the keys draftgen prints: the mask starts at the prompt's `<think>`, tool rows lose their
    `tool_declare` turn's name and the real system prompt, and without
    `train_only_last_turn` the prompt's assistant turns are supervised too."""
    root, records = kimi_run
    plain, tool, multi = records
    train = _export(root, "specforge-conversations", tmp_path / "sf")
    turns = (True, False)
    configs = [
        specforge_config(
            tmp_path,
            TINY_KIMI,
            {
                "train_data_path": str(train),
                "chat_template": "kimi-k2-thinking",
                "train_only_last_turn": last,
                "build_dataset_num_proc": 1,
                "cache_dir": str(tmp_path / f"cache-{last}"),
            },
            name=f"last-turn-{last}",
        )
        for last in turns
    ]
    loaded = {}
    for last, result in zip(turns, specforge_load(configs, tmp_path, TINY_KIMI)):
        assert len(result["rows"]) == len(records)
        # SpecForge shuffles and keeps no id: find each row by its text.
        loaded[last] = {
            kimi.decode(r["input_ids"], skip_special_tokens=False): r for r in result["rows"]
        }

    def row(last: bool, needle: str) -> dict:
        (hit,) = [r for text, r in loaded[last].items() if needle in text]
        return hit

    def supervised(r: dict) -> str:
        ids = [t for t, m in zip(r["input_ids"], r["loss_mask"]) if m]
        return kimi.decode(ids, skip_special_tokens=False)

    ids, mask = sequence(plain)
    got = row(True, "What is 2 + 4?")
    assert tuple(got["input_ids"]) == ids  # this row re-tokenizes to the same ids...
    think = len(plain["input_ids"]) - 1
    assert mask[think] == 0 and got["loss_mask"][think] == 1  # ...but <think> is supervised
    assert got["loss_mask"][think + 1 :] == list(mask[think + 1 :])

    got = row(True, "Weather in Paris?")
    text = kimi.decode(got["input_ids"], skip_special_tokens=False)
    assert "tool_declare" not in text and "You are Kimi." not in text
    assert text.startswith("<|im_system|>system<|im_middle|># Tools")
    assert tuple(got["input_ids"]) != sequence(tool)[0]

    assert "Hello!" not in supervised(row(True, "Tell me about the fox."))
    assert supervised(row(False, "Tell me about the fox.")).startswith("Hello!<|im_end|>")


real_server = pytest.mark.sglang  # the records of a real tiny-kimi SGLang run


@real_server
@pytest.mark.long
def test_speculators_prepare_data_and_loader_keep_ids_and_masks(generated, tmp_path):
    records = _records(generated)
    train = _export(generated, "speculators", tmp_path / "spec")
    result = speculators_load(train, TINY_KIMI, tmp_path)
    rows = _loaded(result)
    # prepare-data shuffles and drops the id: compare as multisets, every row once.
    assert len(rows) == len(records) and Counter(rows) == Counter(map(sequence, records))
    assert all(r["lengths"] == [len(r["input_ids"])] for r in result["rows"])
    packed = result["packed"]
    assert packed["input_ids"] == [t for ids, _ in rows for t in ids]
    assert packed["loss_mask"] == [m for _, mask in rows for m in mask]
    assert packed["document_ids"] == [n for n, (ids, _) in enumerate(rows) for _ in ids]
    assert packed["hidden_states_shape"][1] == len(packed["input_ids"])


@real_server
def test_specforge_prompts_path_reads_both_id_exports_exactly(generated, tmp_path):
    records = _records(generated)
    want = [sequence(r) for r in records]
    for fmt in ("specforge", "speculators"):
        work = tmp_path / fmt
        work.mkdir()
        train = _export(generated, fmt, work / "export")
        assert [tuple(r["input_ids"]) for r in rows_of(train)] == [ids for ids, _ in want]
        config = specforge_config(work, TINY_KIMI, {"prompts_path": str(train)})
        assert _loaded(specforge_load([config], work)[0]) == want, fmt
