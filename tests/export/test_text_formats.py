"""speculators and specforge exports of records built with the real tiny-kimi tokenizer (Kimi-K2
special-token ids, its chat template): ids identical, masks on the prompt/completion boundary,
text that keeps every special token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from draftgen.cli import main
from draftgen.export.records import ExportError

from .builders import END_THINK, THINK, TOOL_SECTION, record, write_output
from .kimi_records import completion as _completion
from .kimi_records import prompt as _prompt

REPO = Path(__file__).resolve().parents[2]
TINY_KIMI = REPO / ".cache" / "models" / "tiny-kimi"
TINY_CHATML = REPO / ".cache" / "models" / "tiny-chatml"

pytestmark = pytest.mark.skipif(
    not (TINY_KIMI / "tokenizer.json").is_file(),
    reason="needs .cache/models/tiny-kimi (run `make models`)",
)


def _export(src, fmt, out, *extra):
    assert main(["export", str(src), "--format", fmt, "--out", str(out), *extra]) == 0
    return [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]


def test_kimi_special_ids_are_what_the_field_uses(kimi):
    assert kimi.convert_tokens_to_ids(["<think>", "</think>", "<|tool_calls_section_begin|>"]) == [
        THINK,
        END_THINK,
        TOOL_SECTION,
    ]


def test_speculators_rows_keep_ids_and_mask_the_boundary(kimi, kimi_run, tmp_path):
    root, records = kimi_run
    rows = _export(root, "speculators", tmp_path / "spec", "--include-truncated")
    assert [r["id"] for r in rows] == [r["id"] for r in records]
    for row, rec in zip(rows, records):
        prompt, completion = rec["input_ids"], rec["output_ids"]
        assert row["input_ids"] == prompt + completion
        assert len(row["loss_mask"]) == len(row["input_ids"])
        assert row["loss_mask"][: len(prompt)] == [0] * len(prompt)
        assert row["loss_mask"][len(prompt) :] == [1] * len(completion)
        assert prompt[-1] == THINK and row["loss_mask"][len(prompt) - 1] == 0
        assert row["text"] == kimi.decode(row["input_ids"], skip_special_tokens=False)
        assert row["primary_id"] == rec["id"].rsplit("/", 1)[0]
        assert row["metadata"]["usage"]["completion_tokens"] == len(completion)
    tool = rows[1]
    assert {THINK, END_THINK, TOOL_SECTION} <= set(tool["input_ids"])
    assert tool["metadata"]["is_tool_call"] and not rows[0]["metadata"]["is_tool_call"]
    for token in (
        "<|im_system|>tool_declare<|im_middle|>",
        "<think>",
        "</think>",
        "<|tool_calls_section_begin|>",
        "<|im_end|>",
    ):
        assert token in tool["text"]
    assert "ünïcödé 😀" in rows[0]["text"]
    # ids survive JSON as plain integers, not floats or strings
    assert all(type(i) is int for i in tool["input_ids"])


def test_speculators_drops_truncated_samples_by_default(kimi_run, tmp_path):
    root, records = kimi_run
    rows = _export(root, "speculators", tmp_path / "spec")
    assert [r["id"] for r in rows] == [records[0]["id"], records[1]["id"]]
    summary = json.loads((tmp_path / "spec" / "export-summary.json").read_text())
    assert summary["datasets"]["chat"]["truncated_dropped"] == 1


def test_specforge_conversations_keep_reasoning_and_tool_tokens(kimi, kimi_run, tmp_path):
    root, records = kimi_run
    rows = _export(root, "specforge-conversations", tmp_path / "sf", "--include-truncated")
    assert [set(r) for r in rows] == [{"id", "conversations"}] * 3
    plain, tool, multi = (r["conversations"] for r in rows)
    assert [m["role"] for m in plain] == ["system", "user", "assistant"]
    assert plain[1]["content"] == "What is 2 + 4? Answer with ünïcödé 😀"
    assert plain[-1]["content"] == "<think>Two plus four is six.</think>The answer is 6 😀"
    assert tool[0] == {"role": "system", "name": "tool_declare", "content": tool[0]["content"]}
    assert "type get_weather" in tool[0]["content"]
    assert tool[1] == {"role": "system", "content": "You are Kimi."}
    assert tool[-1]["content"].startswith(
        "<think>The user wants weather.</think><|tool_calls_section_begin|><|tool_call_begin|>"
    )
    assert tool[-1]["content"].endswith("<|tool_calls_section_end|>")
    assert [m["role"] for m in multi] == ["system", "user", "assistant", "user", "assistant"]
    assert multi[2]["content"] == "Hello!"


def test_specforge_text_renders_back_to_the_same_prompt_text(kimi, kimi_run, tmp_path):
    """Without tools, the exported messages re-render through the template to the prompt's
    exact text; the ids can still differ, which is why docs/export.md warns about text."""
    root, records = kimi_run
    rows = _export(root, "specforge-conversations", tmp_path / "sf")
    messages = rows[0]["conversations"][:-1]
    text = kimi.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False, thinking=True
    )
    assert text == kimi.decode(records[0]["input_ids"], skip_special_tokens=False)


@pytest.mark.skipif(not (TINY_CHATML / "tokenizer.json").is_file(), reason="needs tiny-chatml")
def test_specforge_splits_chatml_prompts_too(tmp_path):
    from transformers import AutoTokenizer

    chatml = AutoTokenizer.from_pretrained(str(TINY_CHATML))
    prompt = _prompt(
        chatml, [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi"}]
    )
    rec = record("c", 0, prompt, _completion(chatml, "hi there<|im_end|>"))
    root = write_output(tmp_path / "run", {"c": [rec]})
    rows = _export(
        root, "specforge-conversations", tmp_path / "sf", "--tokenizer", str(TINY_CHATML)
    )
    conv = rows[0]["conversations"]
    assert [m["role"] for m in conv] == ["system", "user", "assistant"]
    assert conv[1]["content"] == "Say hi"
    assert conv[-1]["content"].endswith("hi there")


def test_tokenizer_comes_from_the_manifest_or_a_clear_error(kimi_run, tmp_path, capsys):
    root, records = kimi_run
    no_model = write_output(tmp_path / "run", {"chat": records[:1]}, model=None)
    assert (
        main(["export", str(no_model), "--format", "speculators", "--out", str(tmp_path / "o")])
        == 2
    )
    assert "--tokenizer" in capsys.readouterr().err
    rows = _export(no_model, "speculators", tmp_path / "o2", "--tokenizer", str(TINY_KIMI))
    assert rows[0]["input_ids"] == records[0]["input_ids"] + records[0]["output_ids"]


def test_unknown_chat_format_is_refused_for_specforge():
    from draftgen.export.specforge_conversations import ChatFormat

    class Plain:
        unk_token_id = 0
        eos_token_id = 1

        def convert_tokens_to_ids(self, token):
            return 0

    with pytest.raises(ExportError, match="use --format specforge, speculators or parquet"):
        ChatFormat(Plain())


def test_specforge_text_rows_are_the_rendered_sequence(kimi, kimi_run, tmp_path):
    root, records = kimi_run
    rows = _export(root, "specforge-conversations", tmp_path / "sf", "--specforge-text")
    assert [set(r) for r in rows] == [{"id", "text"}] * 2
    rec = records[1]
    assert rows[1]["text"] == kimi.decode(
        rec["input_ids"] + rec["output_ids"], skip_special_tokens=False
    )
    assert rows[1]["text"].endswith("<|tool_calls_section_end|><|im_end|>")


def test_conversation_form_prints_specforge_keys_for_kimi(kimi_run, tmp_path, capsys):
    root, records = kimi_run
    out = tmp_path / "sf"
    _export(root, "specforge-conversations", out, "--include-truncated")
    printed = capsys.readouterr()
    assert "warning: --format specforge-conversations" in printed.err
    assert f"  train_data_path: {out.resolve() / 'train.jsonl'}" in printed.out
    assert "  chat_template: kimi-k2-thinking" in printed.out
    assert "  is_preformatted: false" in printed.out
    assert "  train_only_last_turn: true" in printed.out
    _export(root, "specforge-conversations", tmp_path / "txt", "--specforge-text")
    assert "  is_preformatted: true" in capsys.readouterr().out


def test_speculators_prints_its_seq_length_as_specforge_prints_its_config(
    kimi_run, tmp_path, capsys
):
    """The `prepare-data` command with `--seq-length` the longest row (speculators cuts rows
    at 8192 by default), printed and in the card, as the SpecForge export gives `max_length`."""
    root, records = kimi_run
    out = tmp_path / "spec"
    rows = _export(root, "speculators", out, "--include-truncated")
    longest = max(len(r["input_ids"]) for r in rows)
    printed = capsys.readouterr().out
    assert "speculators prepare-data command, also in the export's README.md:" in printed
    command = printed.split("README.md:\n", 1)[1]
    assert command.startswith("speculators prepare-data --model tiny-kimi \\\n")
    assert f"    --data {out.resolve() / 'train.jsonl'} --output PREPARED \\\n" in command
    assert f"    --seq-length {longest}  # the longest exported row (default 8192)" in command
    card = (out / "README.md").read_text()
    assert "The speculators prepare-data command for this export:" in card
    assert "```sh\nspeculators prepare-data --model tiny-kimi" in card
    assert f"--seq-length {longest} " in card


def test_speculators_seq_length_hint_warns_past_its_default(tmp_path, capsys):
    rec = record("long", 0, [1, 2, 3] * 3000, [4, 5], "stop")
    root = write_output(tmp_path / "run", {"long": [rec]}, model=str(TINY_KIMI))
    _export(root, "speculators", tmp_path / "o")
    out = capsys.readouterr().out
    assert "--seq-length 9002  # the longest exported row; the default 8192 would cut" in out
