"""The planner past one node (issue 18): per-rank memory and KV capacity with tensor parallelism
across nodes (MLA's latent replicated on every rank, GQA heads split until there is one per
rank), host memory per node for the hierarchical cache, and the ETA of N replicas."""

from __future__ import annotations

import copy

import pytest
import yaml

from draftgen.plan.modelconfig import parse_model_config
from draftgen.plan.planner import PlanInputs, build_plan
from draftgen.plan.report import render_text
from draftgen.spec import SpecError, load_job, parse_job, parse_spec


@pytest.fixture
def h100(examples):
    return load_job(examples / "kimi-k2.5-h100.yaml")


def _with_server(job, **server):
    raw = job.model_dump(by_alias=True, exclude_none=True, mode="json")
    raw = copy.deepcopy(raw)
    raw["spec"]["server"].update(server)
    return parse_job(raw)


def test_kimi_on_two_h100_nodes_fits_where_one_node_does_not(h100, examples):
    inputs = PlanInputs(base_dir=examples)
    plan = build_plan(h100, inputs)
    assert plan.tensor_parallel_size == 16 and plan.nodes_per_replica == 2
    # 595 GB over 16 ranks: 34.63 GiB of weights per rank on an 80 GB H100.
    assert plan.memory is not None and plan.capacity is not None
    assert round(plan.memory.weights_gib, 1) == 37.6  # weights / 16 + load overhead
    assert plan.capacity.fits and plan.capacity.tokens > 400_000
    # The MLA latent is the same on every rank: TP 16 holds as many tokens per byte as TP 8.
    assert plan.model.cell_bytes("bf16", 16) == plan.model.cell_bytes("bf16", 8) == 70_272
    # The same model on one H100 node (TP 8) leaves no KV pool at all.
    one_node = _with_server(
        h100,
        nodesPerReplica=1,
        tensorParallelSize=8,
        gpusPerNode=None,
        rdma=False,
        hierarchicalCache={"enabled": False},
    )
    single = build_plan(one_node, inputs)
    assert single.capacity is not None and not single.capacity.fits


def test_gqa_heads_split_across_nodes_until_one_per_rank():
    cfg = parse_model_config(
        {
            "architectures": ["LlamaForCausalLM"],
            "num_hidden_layers": 126,
            "num_attention_heads": 128,
            "num_key_value_heads": 8,
            "hidden_size": 16384,
        }
    )
    per_head = (128 + 128) * 126 * 2
    assert cfg.cell_bytes("bf16", 4) == 2 * per_head  # 8 heads over 4 ranks
    assert cfg.cell_bytes("bf16", 8) == per_head
    # TP 16 over two nodes: fewer KV heads than ranks, so each rank holds a replica of one.
    assert cfg.cell_bytes("bf16", 16) == per_head


def test_host_memory_is_checked_per_node(h100, examples):
    plan = build_plan(h100, PlanInputs(base_dir=examples))
    hm = plan.host_memory
    assert hm is not None and hm.tensor_parallel_size == 8  # the ranks on one node, not 16
    assert hm.total_gb == 384 and hm.ok
    text = render_text(plan)
    assert "tensor parallel 16 over 2 nodes (8 ranks each)" in text
    assert "48 GB per rank × 8 ranks = 384 GB" in text and "on each node" in text
    # The spec applies the same per-node rule: 300 GB × 8 ranks is over a 449 GB node.
    raw = yaml.safe_load(yaml.safe_dump(h100.spec.to_wire()))
    raw["server"].update(
        hostMemoryGB=449, hierarchicalCache={"enabled": True, "sizeGBPerRank": 300}
    )
    with pytest.raises(SpecError) as err:
        parse_spec(raw, name="x")
    assert "300 GB per rank × 8 ranks = 2400 GB > 449 GB host" in "; ".join(err.value.problems)
    raw["server"]["hierarchicalCache"]["sizeGBPerRank"] = 48
    assert parse_spec(raw, name="x").server.hicache_total_gb == 384


def test_eta_of_n_replicas(h100, examples):
    one = build_plan(h100, PlanInputs(base_dir=examples))
    two = build_plan(_with_server(h100, replicas=2), PlanInputs(base_dir=examples))
    assert one.ceiling_tokens_per_second and two.ceiling_tokens_per_second
    assert two.ceiling_tokens_per_second == pytest.approx(2 * one.ceiling_tokens_per_second)
    assert one.eta and two.eta
    assert two.eta.total_seconds == pytest.approx(one.eta.total_seconds / 2)
