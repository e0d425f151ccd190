"""`draftgen preview`: the demo's Kimi prompts as they will be sent, special tokens marked, with
ids, counts, the generation prefix, the thinking setting and the tools declared."""

from __future__ import annotations

from pathlib import Path

from draftgen.cli import main

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.yaml"


def test_preview_prints_the_demos_kimi_prompts_with_markers(capsys, tiny_kimi):
    assert main(["preview", str(DEMO), "-n", "2"]) == 0
    out = capsys.readouterr().out
    assert 'thinking: chatTemplateKwargs {"thinking": true}' in out
    assert "generation prefix: '<think>' = ids [163606]" in out
    assert out.count("=== chat (messages) sample") == 2
    assert out.count("=== tools (glaive) sample") == 2
    assert "[[<|im_user|>]]user[[<|im_middle|>]]" in out
    assert "tools: 1 declared in the model's own format" in out
    assert "[[<|im_system|>]]tool_declare[[<|im_middle|>]]" in out
    text_blocks = out.split("--- text (special tokens in [[...]]) ---\n")[1:]
    assert all(b.split("\n--- ids ---", 1)[0].endswith("[[<think>]]") for b in text_blocks)
    assert "ends with the generation prefix" in out
    ids = out.split("--- ids ---\n")[1].split("\n", 1)[0].split()
    assert ids[-1] == "163606"


def test_preview_of_an_unknown_dataset_names_the_ones_there(capsys):
    assert main(["preview", str(DEMO), "--dataset", "nope"]) == 2
    assert "the job has chat, tools, prompts" in capsys.readouterr().err
