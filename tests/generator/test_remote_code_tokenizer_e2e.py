"""A tokenizer that exists only as remote code (tiny-kimi-tiktoken: `tokenization_tinykimi.py`
wrapping a tiktoken BPE file, as Kimi-K2.5 ships its tokenizer) through the whole generator, as
the CLI, against the real tiny-kimi server (same weights and special ids): the prompt carries the
tool declaration the tokenizer class computed, and the records are exact."""

from __future__ import annotations

import pytest

from .gen_helpers import THINK, WEATHER_TOOL, direct_generate, generate_tools_dataset, template_ids

pytestmark = pytest.mark.sglang


def test_remote_code_tiktoken_tokenizer_end_to_end(tmp_path, tiny_kimi_tiktoken, sglang_server):
    from transformers import AutoTokenizer

    rows = [
        {
            "id": "w1",
            "tools": [WEATHER_TOOL],
            "messages": [{"role": "user", "content": "What is the weather in Lagos?"}],
        }
    ]
    [rec], _ = generate_tools_dataset(tmp_path, tiny_kimi_tiktoken, sglang_server.url, rows)
    tok = AutoTokenizer.from_pretrained(str(tiny_kimi_tiktoken), trust_remote_code=True)
    assert type(tok).__name__ == "TinyKimiTokenizer"
    own = template_ids(tok, rows[0]["messages"], rows[0]["tools"])
    assert rec["input_ids"] == own and rec["input_ids"][-1] == THINK
    # The declaration the tokenizer class computed (tools_ts_str), not the template's JSON fallback.
    assert "type get_weather = (_: {\ncity: string,\n}) => any;" in tok.decode(rec["input_ids"])
    direct = direct_generate(sglang_server.url, rec["input_ids"], 12)
    assert rec["output_ids"] == direct["output_ids"]
