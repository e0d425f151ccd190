"""A tool fallback through the whole generator (the CLI against the real tiny-kimi server, with
the remote-code tiny-kimi-tiktoken tokenizer): the record's `meta.sample.tool_fallback` says why,
the dataset's manifest counts it, and the prompt is still exactly the tokenizer's own."""

from __future__ import annotations

import json

import pytest

from draftgen.contract import layout
from tests.generator.gen_helpers import WEATHER_TOOL, generate_tools_dataset, template_ids

from .test_tool_fallback import FAILED, ODD_TOOL

pytestmark = pytest.mark.sglang


def test_a_fallback_is_in_the_record_and_the_manifest(tmp_path, tiny_kimi_tiktoken, sglang_server):
    from transformers import AutoTokenizer

    rows = [
        {"id": f"r{n}", "tools": [tool], "messages": [{"role": "user", "content": f"Do {n}."}]}
        for n, tool in enumerate([WEATHER_TOOL, ODD_TOOL])
    ]
    written, out = generate_tools_dataset(
        tmp_path, tiny_kimi_tiktoken, sglang_server.url, rows, sampling={"maxNewTokens": 4}
    )
    assert FAILED not in out
    recs = {r["id"].split("/")[1]: r for r in written}
    assert "tool_fallback" not in recs["r0"]["meta"]["sample"]
    assert FAILED in recs["r1"]["meta"]["sample"]["tool_fallback"]
    tok = AutoTokenizer.from_pretrained(str(tiny_kimi_tiktoken), trust_remote_code=True)
    assert recs["r1"]["input_ids"] == template_ids(tok, rows[1]["messages"], rows[1]["tools"])
    manifest = json.loads(layout.dataset_manifest(tmp_path / "out" / "tools").read_text())
    assert manifest["tool_fallbacks"] == 1
