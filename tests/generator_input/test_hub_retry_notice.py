"""A tokenizer named by hub id says, before huggingface_hub's quiet retries, what it fetches
and what waits; a local directory or HF_HUB_OFFLINE=1 prints nothing."""

from __future__ import annotations

import pytest

from draftgen.generator.prompts import tokenizer as tokenizer_module


class _Tok:
    model_max_length = 0


@pytest.fixture
def fake_load(monkeypatch):
    import transformers

    monkeypatch.setattr(
        transformers.AutoTokenizer, "from_pretrained", staticmethod(lambda *a, **k: _Tok())
    )


def test_a_hub_tokenizer_says_what_is_fetched_and_retried(fake_load, monkeypatch, capsys):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    tokenizer_module.load_tokenizer("moonshotai/Kimi-K2.5", True)
    err = capsys.readouterr().err
    assert "fetching moonshotai/Kimi-K2.5 from the Hugging Face hub" in err
    assert "retries" in err


def test_a_local_directory_or_offline_prints_nothing(fake_load, monkeypatch, capsys, tmp_path):
    tokenizer_module.load_tokenizer(str(tmp_path), False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tokenizer_module.load_tokenizer("moonshotai/Kimi-K2.5", True)
    assert capsys.readouterr().err == ""
