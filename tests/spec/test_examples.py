"""The shipped examples load and say what the field deployment needs."""

from __future__ import annotations

from draftgen.spec import load_job


def test_kimi_example_is_the_field_deployment(examples):
    job = load_job(examples / "kimi-k2.5.yaml")
    spec = job.spec
    assert spec.server.tensor_parallel_size == 8
    assert spec.server.gpus == 8
    assert spec.server.kv_cache_dtype == "bf16"
    assert spec.server.mem_fraction_static == 0.88
    assert spec.server.hierarchical_cache.size_gb_per_rank == 48
    assert spec.server.hicache_total_gb == 384
    assert spec.server.host_memory_gb == 449
    assert spec.model.generation_prefix == "<think>"
    assert spec.model.chat_template_kwargs == {"thinking": True}
    assert "</think>" in spec.model.special_tokens
    formats = [d.format for d in spec.datasets]
    assert formats.count("pretokenized") == 2 and len(formats) == 10
    assert all(d.budget.completion_tokens == 10_000_000 for d in spec.datasets)
    assert spec.warnings() == []


def test_demo_example_loads(examples):
    job = load_job(examples / "demo.yaml")
    assert len(job.spec.datasets) >= 2
    assert any(d.format == "glaive" for d in job.spec.datasets)
    assert all(not d.budget.unlimited for d in job.spec.datasets)


def test_max_new_tokens_is_never_sglang_default():
    from draftgen.spec import SamplingSpec

    # SGLang's default of 128 silently truncates reasoning; ours is explicit and generous.
    assert SamplingSpec().max_new_tokens >= 4096


def test_dataset_sampling_override_inherits_the_rest(examples):
    job = load_job(examples / "kimi-k2.5.yaml")
    from draftgen.spec import SamplingOverrides

    ds = job.spec.datasets[0].model_copy(update={"sampling": SamplingOverrides(temperature=0.0)})
    merged = job.spec.sampling_for(ds)
    assert merged.temperature == 0.0
    assert merged.top_p == 0.95 and merged.max_new_tokens == 32768


def test_wire_names_keep_unit_capitals():
    from draftgen.spec import ServerSpec

    wire = ServerSpec(
        hierarchical_cache={"enabled": True, "size_gb_per_rank": 8}, host_memory_gb=449
    ).to_wire()
    assert wire["hierarchicalCache"]["sizeGBPerRank"] == 8
    assert wire["hostMemoryGB"] == 449
    assert "allowLossyKVCache" in wire


def test_mem_fraction_above_090_warns():
    from draftgen.spec import ServerSpec

    warnings = ServerSpec(mem_fraction_static=0.93).warnings()
    assert any("memFractionStatic" in w and "headroom" in w for w in warnings)
    assert ServerSpec(mem_fraction_static=0.88).warnings() == []
