"""A real SGLang server on the CPU (tiny-kimi): the native /generate contract draftgen relies on."""

from __future__ import annotations

import json
import urllib.request

import pytest

from scripts.test_models.samples import SAMPLE_TOOLS
from tests.generator.gen_helpers import direct_generate, template_ids

pytestmark = pytest.mark.sglang

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.read()


@pytest.fixture(scope="module")
def prompt_ids(tiny_kimi):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_kimi))
    ids = template_ids(tok, MESSAGES, SAMPLE_TOOLS)
    assert ids[-1] == 163606  # <think>
    return ids


def test_generate_input_ids_greedy_is_deterministic(sglang_server, prompt_ids):
    first = direct_generate(sglang_server.url, prompt_ids, 24, timeout=300)
    second = direct_generate(sglang_server.url, prompt_ids, 24, timeout=300)
    assert first["output_ids"], first
    assert all(isinstance(i, int) for i in first["output_ids"])
    assert first["meta_info"]["prompt_tokens"] == len(prompt_ids)
    assert first["meta_info"]["completion_tokens"] == len(first["output_ids"])
    assert first["meta_info"]["finish_reason"]["type"] in ("length", "stop")
    assert second["output_ids"] == first["output_ids"]


def test_server_info_reports_kv_capacity(sglang_server):
    info = json.loads(_get(sglang_server.url + "/get_server_info"))
    want = getattr(sglang_server, "max_total_tokens", None)
    if want is None:
        pytest.skip("external server: --max-total-tokens unknown")
    assert info["max_total_num_tokens"] == want


def test_metrics_expose_token_usage(sglang_server):
    text = _get(sglang_server.url + "/metrics").decode()
    assert "sglang:token_usage" in text
