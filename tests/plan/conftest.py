"""Figures from the Kimi-K2.5 deployment (field facts, lessons 4–6 and 9) and an SGLang log."""

from __future__ import annotations

from pathlib import Path

import pytest

from draftgen.plan.kvcache import measured
from draftgen.plan.modelconfig import load_model_config

# A Llama-3-8B-style GQA config (32 query heads over 8 key/value heads), bf16.
LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "torch_dtype": "bfloat16",
}

FREE_BEFORE_GIB = 94.04
FREE_AFTER_GIB = 21.71

# One start of Kimi-K2.5 at 0.88 as SGLang 0.5.x logs it: every rank logs its own free memory;
# the ranks differ a little, and SGLang sizes the pool from the minimum.
KIMI_START_LOG = """\
[2026-03-02 09:00:01] server_args=ServerArgs(model_path='/models/Kimi-K2.5', tokenizer_path='/models/Kimi-K2.5', trust_remote_code=True, context_length=65536, mem_fraction_static=0.88, max_running_requests=None, max_total_tokens=None, chunked_prefill_size=8192, kv_cache_dtype='bf16', tp_size=8, attn_tp_size=None, enable_hierarchical_cache=True, hicache_size=48)
[2026-03-02 09:00:40 TP0] Load weight begin. avail mem=94.06 GB
[2026-03-02 09:00:40 TP3] Load weight begin. avail mem=94.04 GB
[2026-03-02 09:00:40 TP7] Load weight begin. avail mem=94.05 GB
[2026-03-02 09:19:12 TP3] Load weight end. type=KimiK25ForConditionalGeneration, dtype=torch.bfloat16, avail mem=21.71 GB, mem usage=72.33 GB.
[2026-03-02 09:19:13 TP0] Load weight end. type=KimiK25ForConditionalGeneration, dtype=torch.bfloat16, avail mem=21.74 GB, mem usage=72.32 GB.
[2026-03-02 09:19:13 TP7] Load weight end. type=KimiK25ForConditionalGeneration, dtype=torch.bfloat16, avail mem=21.72 GB, mem usage=72.33 GB.
[2026-03-02 09:19:14 TP0] KV Cache is allocated. #tokens: 159277, KV size: 10.42 GB
[2026-03-02 09:19:14 TP0] Memory pool end. avail mem=11.31 GB
[2026-03-02 09:19:14 TP3] Memory pool end. avail mem=11.28 GB
[2026-03-02 09:19:15 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=11.10 GB
[2026-03-02 09:20:07 TP0] Capture cuda graph end. Time elapsed: 52.37 s. mem usage=5.49 GB. avail mem=5.61 GB.
[2026-03-02 09:20:09 TP0] max_total_num_tokens=159277, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=65536, available_gpu_mem=5.52 GB
[2026-03-02 09:20:11] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
"""


@pytest.fixture(scope="session")
def kimi_config(examples: Path):
    return load_model_config(examples / "models" / "kimi-k2.5" / "config.json")


@pytest.fixture(scope="session")
def kimi_memory():
    return measured(FREE_BEFORE_GIB, FREE_AFTER_GIB)
