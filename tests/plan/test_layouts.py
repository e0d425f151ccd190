"""Data-parallel attention and decode context parallelism, pinned to hand arithmetic from
Kimi-K2.5's shapes (examples/models/kimi-k2.5/config.json) and the seed's measured start
(94.04 GiB free before loading, 21.71 after, TP 8, memFractionStatic 0.88, bf16 KV).

Per layer, split over attention TP (SGLang 0.5.23 models/deepseek_v2.py):
  q_b 1536 × 64 × 192 = 18,874,368; kv_b 512 × 64 × 256 = 8,388,608, twice with the loader's
  w_kc/w_vc copies; o_proj 64 × 128 × 7168 = 58,720,256 → 94,371,840 weights.
  × 61 layers × 2 bytes (attention stays bf16 in Kimi's INT4 checkpoint) = 11,513,364,480 bytes,
  + the input embedding 163,840 × 7168 × 2 = 2,348,810,240 → S = 13,862,174,720 bytes.
Each GPU holds S / (8 / d): d = 2 adds S/4 − S/8 = 1,732,771,840 bytes, d = 4 adds 3S/8, d = 8 7S/8.
The pool per rank: ((21.71 − 94.04 × 0.12) GiB − extra) // 70,272 bytes per token.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from draftgen.plan.attention_weights import attention_dtype, attention_weights
from draftgen.plan.kvcache import measured
from draftgen.plan.layouts import (
    Layout,
    LayoutNotPlanned,
    dp_graph_gib,
    graph_max_bs,
    layouts,
    rank_pool_tokens,
)
from draftgen.plan.modelconfig import parse_model_config
from draftgen.plan.planner import PlanInputs, build_plan
from draftgen.plan.report import render_text, to_dict
from draftgen.spec import parse_job

from .conftest import LLAMA_8B

GiB = 1 << 30
S = 13_862_174_720
REST = (21.71 - 94.04 * 0.12) * GiB
CELL = (512 + 64) * 61 * 2
PLAIN_TOKENS = 159_294


def rank(d: int) -> int:
    extra = S / (8 // d) - S / 8
    return max(int((REST - extra) // CELL), 0)


def test_attention_weights_from_kimis_shapes(kimi_config) -> None:
    w = attention_weights(kimi_config.mla_shapes)
    assert w.per_layer_split_elements == 1536 * 64 * 192 + 2 * 512 * 64 * 256 + 64 * 128 * 7168
    assert w.per_layer_split_elements == 94_371_840
    assert w.split_bytes + w.embedding_bytes == S
    assert w.replicated_bytes == 7168 * (1536 + 512 + 64) * 61 * 2  # fused q_a + kv_a
    assert w.extra_bytes(8, 2) == pytest.approx(1_732_771_840)
    assert w.extra_bytes(8, 4) == pytest.approx(S * 3 / 8)
    assert w.extra_bytes(8, 8) == pytest.approx(S * 7 / 8)
    # Measured at d = 4, planned at d = 1: the weights come back.
    assert w.extra_bytes(8, 1, from_dp=4) == pytest.approx(-S * 3 / 8)


@pytest.mark.parametrize(("d", "expected"), [(1, 159_294), (2, 134_636), (4, 85_320), (8, 0)])
def test_pool_per_rank_at_each_dp_attention_size(kimi_config, kimi_memory, d, expected) -> None:
    got = rank_pool_tokens(kimi_config, kimi_memory, 0.88, "bf16", 8, Layout(d))
    assert got == rank(d) == expected


def test_the_seeds_machine_gets_1_7x_at_d2_2_1x_at_d4_and_d8_does_not_start(
    kimi_config, kimi_memory
) -> None:
    totals = {
        d: d * rank_pool_tokens(kimi_config, kimi_memory, 0.88, "bf16", 8, Layout(d))
        for d in (1, 2, 4, 8)
    }
    assert totals == {1: PLAIN_TOKENS, 2: 269_272, 4: 341_280, 8: 0}
    assert round(totals[2] / PLAIN_TOKENS, 2) == 1.69
    assert round(totals[4] / PLAIN_TOKENS, 2) == 2.14


def test_h200_approaches_6x_at_d8(kimi_config) -> None:
    # 8 × H200 (140.4 GiB): same weights per GPU (72.33 GiB), 138.9 GiB free before loading.
    h200 = measured(138.9, 138.9 - 72.33)
    rest = (66.57 - 138.9 * 0.12) * GiB
    plain = rank_pool_tokens(kimi_config, h200, 0.88, "bf16", 8, Layout())
    d8 = rank_pool_tokens(kimi_config, h200, 0.88, "bf16", 8, Layout(8))
    assert plain == int(rest // CELL) == 762_492
    assert d8 == int((rest - S * 7 / 8) // CELL) == 589_885
    assert round(8 * d8 / plain, 2) == 6.19


def test_dcp_stripes_rows_over_its_gpus_without_extra_weights(kimi_config, kimi_memory) -> None:
    # kv_cache_configurator.logical_token_capacity: rows × attn_dcp_size.
    for c in (2, 4, 8):
        assert rank_pool_tokens(kimi_config, kimi_memory, 0.88, "bf16", 8, Layout(1, c)) == (
            PLAIN_TOKENS * c
        )
    both = rank_pool_tokens(kimi_config, kimi_memory, 0.88, "bf16", 8, Layout(2, 2))
    assert both == rank(2) * 2


def test_every_layout_sglang_accepts() -> None:
    assert layouts(8) == [
        Layout(1, 1), Layout(1, 2), Layout(1, 4), Layout(1, 8),
        Layout(2, 1), Layout(2, 2), Layout(2, 4),
        Layout(4, 1), Layout(4, 2),
        Layout(8, 1),
    ]  # fmt: skip
    assert len(layouts(16)) == 15
    assert layouts(8, mla=False) == [Layout(1), Layout(2), Layout(4), Layout(8)]


def test_attention_dtype_from_the_quantization_section() -> None:
    # Kimi's INT4 checkpoint leaves self_attn in bf16.
    kimi_q = {
        "quant_method": "compressed-tensors",
        "config_groups": {"g": {"weights": {"num_bits": 4, "group_size": 32}}},
        "ignore": ["lm_head", "re:.*self_attn.*"],
    }
    assert attention_dtype({"quantization_config": kimi_q}, "bfloat16").element_bytes == 2
    # Without the ignore entry: 4 bits + a 16-bit scale per 32 weights.
    del kimi_q["ignore"]
    assert attention_dtype({"quantization_config": kimi_q}, "bfloat16").element_bytes == (
        0.5 + 2 / 32
    )
    # DeepSeek-V3's fp8: one byte + a float32 scale per 128 × 128 block.
    v3 = {"quant_method": "fp8", "weight_block_size": [128, 128]}
    assert attention_dtype({"quantization_config": v3}, "bfloat16").element_bytes == (1 + 4 / 16384)
    assert attention_dtype({}, "bfloat16").element_bytes == 2


def test_gqa_gains_kv_only_while_attention_tp_exceeds_its_kv_heads(kimi_memory) -> None:
    llama = parse_model_config({**LLAMA_8B, "vocab_size": 128_256})
    # 8 KV heads at TP 8: one head per GPU; d = 2 puts two on each GPU of a 4-GPU group, so each
    # of 2 pools holds half the tokens: no gain, and more weights per GPU.
    plain = rank_pool_tokens(llama, kimi_memory, 0.88, "bf16", 8, Layout())
    d2 = rank_pool_tokens(llama, kimi_memory, 0.88, "bf16", 8, Layout(2))
    assert 2 * d2 < plain
    # 4 KV heads at TP 8 are copied to two GPUs each; d = 2 stops the copying: ~2× the tokens.
    few = parse_model_config({**LLAMA_8B, "num_key_value_heads": 4, "vocab_size": 128_256})
    plain4 = rank_pool_tokens(few, kimi_memory, 0.88, "bf16", 8, Layout())
    d2_4 = rank_pool_tokens(few, kimi_memory, 0.88, "bf16", 8, Layout(2))
    assert 1.9 < 2 * d2_4 / plain4 < 2.0
    with pytest.raises(LayoutNotPlanned, match="MLA models only"):
        rank_pool_tokens(llama, kimi_memory, 0.88, "bf16", 8, Layout(1, 2))


def test_sglangs_graph_batch_and_dp_attention_allowance() -> None:
    # memory_hook.handle_gpu_memory_settings: 95.6 GiB GPUs at TP 8 capture up to 512.
    assert graph_max_bs(95.6, 8, None) == 512
    assert graph_max_bs(95.6, 2, None) == 256
    assert graph_max_bs(95.6, 8, 72) == 72
    # memory_hook.reserve_for_graph_mb: 512 × 2 × (3 + 1.5) MB at d = 2.
    assert dp_graph_gib(2, 512) == 512 * 2 * 4.5 / 1024
    assert dp_graph_gib(4, 24) == 24 * 4 * 3 / 1024
    assert dp_graph_gib(1, 512) == 0


@pytest.fixture
def kimi_job(examples: Path) -> dict:
    return yaml.safe_load((examples / "kimi-k2.5.yaml").read_text())


def _plan(raw: dict, examples: Path):
    return build_plan(parse_job(raw), PlanInputs(base_dir=examples))


def test_the_table_marks_dp_attention_4_best_and_refuses_d8(kimi_job, examples) -> None:
    plan = _plan(kimi_job, examples)
    rows = {r.layout: r for r in plan.layouts}
    assert len(rows) == 10
    assert rows[Layout()].current and rows[Layout()].total_tokens == PLAIN_TOKENS
    best = [r for r in plan.layouts if r.best]
    assert [r.layout for r in best] == [Layout(4)]
    d4 = rows[Layout(4)]
    assert (d4.rank_tokens, d4.total_tokens) == (85_320, 341_280)
    # 85,320 / 4,306-token mean sequences = 19 per rank, × 4 ranks.
    assert d4.decodes == 76
    # 17 tok/s × 72.33 / (72.33 + 3S/8 GiB) weights read per step.
    assert d4.decode_tokens_per_second == pytest.approx(17 * 72.33 / (72.33 + S * 3 / 8 / GiB))
    assert d4.speed_basis == "estimated"
    assert d4.ceiling_tokens_per_second == pytest.approx(76 * d4.decode_tokens_per_second)
    # 512 × 4 × 4.5 MB of graphs would leave too little: a batch covering 19 decodes, rounded up.
    assert d4.advice == "--cuda-graph-max-bs-decode 24"
    d8 = rows[Layout(8)]
    assert d8.status == "cannot start" and "no KV pool at memFractionStatic 0.88" in d8.reason
    # DCP rows: more tokens on paper, an upper-bound speed, never best unmeasured.
    assert rows[Layout(1, 8)].total_tokens == 8 * PLAIN_TOKENS
    assert rows[Layout(1, 8)].speed_basis == "upper bound" and not rows[Layout(1, 8)].best
    text = render_text(plan)
    assert "★ best lossless" in text and "a plan, not a measurement" in text
    assert "attentionDataParallelSize: 4" in text
    table = to_dict(plan)["layouts"]
    assert {(r["layout"]["attention_dp"], r["layout"]["dcp"]) for r in table} == {
        (r.layout.attention_dp, r.layout.dcp) for r in plan.layouts
    }


def test_a_measured_speed_replaces_the_estimate(kimi_job, examples) -> None:
    raw = copy.deepcopy(kimi_job)
    raw["spec"]["planning"]["measuredLayouts"] = [
        {"decodeContextParallelSize": 4, "decodeTokensPerSecond": 12.0}
    ]
    rows = {r.layout: r for r in _plan(raw, examples).layouts}
    dcp4 = rows[Layout(1, 4)]
    assert (dcp4.decode_tokens_per_second, dcp4.speed_basis) == (12.0, "measured")
    # 147 decodes × 12 tok/s beats DP-attention 4's 76 × 15.9: now the best.
    assert dcp4.best and not rows[Layout(4)].best


def test_the_servers_own_layout_sets_the_plans_capacity(kimi_job, examples) -> None:
    raw = copy.deepcopy(kimi_job)
    raw["spec"]["server"]["attentionDataParallelSize"] = 4
    plan = _plan(raw, examples)
    assert (plan.rank_pool_tokens, plan.capacity_tokens, plan.decodes) == (85_320, 341_280, 76)
    assert plan.ceiling_tokens_per_second == 76 * 17  # the given speed is the server's own
    # Measured at d = 4 instead: the same memory seen from the other side gives plain TP's pool.
    back = copy.deepcopy(kimi_job)
    back["spec"]["planning"]["measured"] = {
        "freeBeforeLoadGiB": 94.04,
        "freeAfterLoadGiB": 21.71 - S * 3 / 8 / GiB,
        "attentionDataParallelSize": 4,
    }
    assert _plan(back, examples).capacity_tokens == PLAIN_TOKENS


def _validate(tmp_path: Path, examples: Path, server: dict, sampling: dict | None = None):
    import shutil

    from draftgen.cli import main
    from tests.jobs import job_document, write_job_yaml

    (tmp_path / "m").mkdir(exist_ok=True)
    shutil.copy(examples / "models" / "kimi-k2.5" / "config.json", tmp_path / "m")
    doc = job_document(
        "kimi",
        model={"weights": "m"},
        server={"tensorParallelSize": 8, "memFractionStatic": 0.88, **server},
        sampling=sampling or {"maxNewTokens": 32768},
        planning={
            "measured": {"freeBeforeLoadGiB": 94.04, "freeAfterLoadGiB": 21.71},
            "meanPromptTokens": 4000,
        },
        datasets=[{"name": "chat", "source": "c.jsonl", "format": "messages"}],
    )
    return main(["validate", "--local", str(write_job_yaml(tmp_path / "job.yaml", doc))])


def test_validate_refuses_a_layout_that_cannot_start(tmp_path, examples, capsys) -> None:
    assert _validate(tmp_path, examples, {"attentionDataParallelSize": 8}) == 2
    err = capsys.readouterr().err
    assert "spec.server.attentionDataParallelSize: DP-attn 8 cannot start" in err
    assert "leave no KV pool at memFractionStatic 0.88" in err
    assert _validate(tmp_path, examples, {"attentionDataParallelSize": 4}) == 0


def test_validate_refuses_a_rank_too_small_for_the_longest_request(
    tmp_path, examples, capsys
) -> None:
    # One rank of DP-attention 4 holds 85,320 tokens; 4,000 + 90,000 do not fit.
    assert (
        _validate(tmp_path, examples, {"attentionDataParallelSize": 4}, {"maxNewTokens": 90000})
        == 2
    )
    err = capsys.readouterr().err
    assert "one rank's KV pool holds 85,320 tokens" in err and "94,000 tokens" in err
    # Striping each request over 2 GPUs of its group doubles what one rank holds.
    server = {"attentionDataParallelSize": 4, "decodeContextParallelSize": 2}
    assert _validate(tmp_path, examples, server, {"maxNewTokens": 90000}) == 0


def test_the_examples_comment_is_the_planners_recommendation(kimi_job, examples) -> None:
    """examples/kimi-k2.5.yaml shows the recommendation as a comment: it must say what the
    planner says, be marked as a plan, and be a valid spec when uncommented."""
    text = (examples / "kimi-k2.5.yaml").read_text()
    assert "A PLAN, NOT A MEASUREMENT" in text
    best = next(r for r in _plan(kimi_job, examples).layouts if r.best)
    assert f"#   attentionDataParallelSize: {best.layout.attention_dp}" in text
    assert best.layout.dcp == 1
    assert f'#   extraArgs: ["{best.advice.split()[0]}", "{best.advice.split()[1]}"]' in text
    for figure in (best.rank_tokens, best.total_tokens, best.decodes):
        assert f"{figure:,}" in text
    assert f"{best.total_tokens / PLAIN_TOKENS:.2f}×" in text
    taken = copy.deepcopy(kimi_job)
    taken["spec"]["server"].update(
        attentionDataParallelSize=best.layout.attention_dp, extraArgs=best.advice.split()
    )
    plan = _plan(taken, examples)
    assert plan.capacity_tokens == best.total_tokens and not any(
        "cuda-graph" in w for w in plan.warnings
    )


def test_status_plan_counts_every_ranks_pool(kimi_job, examples) -> None:
    """The operator's status.plan (plan_status) reports the server's tokens over its ranks."""
    from draftgen.plan.planner import plan_status

    raw = copy.deepcopy(kimi_job)
    raw["spec"]["server"]["attentionDataParallelSize"] = 2
    status = plan_status(parse_job(raw), PlanInputs(base_dir=examples))
    assert (status.kv_capacity_tokens, status.concurrent_decodes) == (269_272, 2 * 31)
