"""Logs of two real starts of sglang 0.5.23 on this machine's CPU, serving the tiny-chatml test
model (Qwen2: 2 layers, 2 KV heads × head_dim 16, float32 checkpoint):

* `sglang-0.5.23-cpu-capped.log`: `--max-total-tokens 4096` (as the tests' servers run);
* `sglang-0.5.23-cpu-mf0.1.log`: `--mem-fraction-static 0.1`, no cap (a real 1.84 GB pool).

Recorded with `python -m sglang.launch_server --model-path .cache/models/tiny-chatml --device cpu
--attention-backend torch_native --sampling-backend pytorch --cuda-graph-backend-decode=disabled
--cuda-graph-backend-prefill=disabled --sleep-on-idle [flags above]` and SGLANG_USE_CPU_ENGINE=1;
only the timestamped lines are kept. They pin the line formats the parser reads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from draftgen.cli import main
from draftgen.plan.kvcache import GiB, kv_capacity, parse_start_log, relative_error
from draftgen.plan.modelconfig import parse_model_config
from tests.jobs import dataset, job_document, write_job_yaml

DATA = Path(__file__).parent / "data"
TINY_CHATML = {
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "torch_dtype": "float32",
}


def _log(name):
    return parse_start_log((DATA / name).read_text())


def test_capped_start_is_read():
    log = _log("sglang-0.5.23-cpu-capped.log")
    assert (log.free_before_load_gib, log.free_after_load_gib, log.ranks) == (18.83, 18.83, 1)
    assert log.max_total_num_tokens == 4096 and log.max_total_tokens == 4096
    assert (log.mem_fraction_static, log.kv_cache_dtype, log.tp_size) == (0.719, "auto", 1)
    assert log.ready_free_gib == 18.88  # `available_cpu_mem` on a CPU


def test_real_pool_matches_the_mha_cell_rule():
    """SGLang's own pool size over its token count is the cell the planner computes."""
    log = _log("sglang-0.5.23-cpu-mf0.1.log")
    assert log.max_total_num_tokens == 7_701_123
    assert log.kv_pool_gib == pytest.approx(1.84)  # K 0.92 GB + V 0.92 GB
    cell = parse_model_config(TINY_CHATML).cell_bytes("auto", 1)
    assert cell == 256  # 2 KV heads × (16 + 16) × 2 layers × 2 bytes (float16)
    # The logged sizes have two decimals: 0.005 GB of 1.84 is 0.3%.
    assert relative_error(log.kv_pool_gib * GiB / log.max_total_num_tokens, cell) < 0.01


def test_rule_on_the_uncapped_cpu_start():
    """On a CPU, "free memory" is the host's and drifts while the server starts (here by ~0.07
    GiB between the weights and the pool), so the prediction is a few percent high; on a GPU the
    figures are per device and the Kimi-K2.5 pool is matched to 0.02%."""
    log = _log("sglang-0.5.23-cpu-mf0.1.log")
    cell = parse_model_config(TINY_CHATML).cell_bytes("auto", 1)
    predicted = kv_capacity(log.profile(), 0.1, cell, "auto").tokens
    assert predicted >= log.max_total_num_tokens
    assert relative_error(predicted, log.max_total_num_tokens) < 0.05


def test_plan_from_the_real_log(capsys, tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(__import__("json").dumps(TINY_CHATML))
    write_job_yaml(
        tmp_path / "job.yaml",
        job_document(
            "tiny",
            model={"weights": "m"},
            server={
                "tensorParallelSize": 1,
                "memFractionStatic": 0.719,
                "extraArgs": ["--max-total-tokens", "4096"],
            },
            datasets=[
                dataset(
                    "chat",
                    "c.jsonl",
                    "messages",
                    budget={"completionTokens": 4000},
                    expected={"promptTokens": 200, "completionTokens": 56},
                )
            ],
        ),
    )
    code = main(
        [
            "plan",
            "--job",
            str(tmp_path / "job.yaml"),
            "--from-log",
            str(DATA / "sglang-0.5.23-cpu-capped.log"),
            "--decode-tokens-per-second",
            "20",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "capped by --max-total-tokens 4,096" in out and "(0.00% off)" in out
    assert "decodes that fit: 4,096 / 256 = 16" in out
    assert "16 × 20 tok/s = 320 completion tok/s" in out
