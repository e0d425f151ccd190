"""`spec.planning` and `spec.datasets[].expected`: what the capacity planner needs to know that
the rest of the spec does not say (GPU memory, one observed start, request lengths, speed).

Every field is optional: the planner reports what it can compute and names what is missing.
"""

from __future__ import annotations

from pydantic import Field, StrictFloat, StrictInt, model_validator

from .base import SpecModel


class ExpectedLengths(SpecModel):
    """Mean request lengths of one dataset, in tokens of the target model's tokenizer."""

    prompt_tokens: StrictInt | None = Field(default=None, ge=1)
    """Mean rendered prompt length (chat template included) per sample."""

    completion_tokens: StrictInt | None = Field(default=None, ge=1)
    """Mean completion length per sample (reasoning included), e.g. 3793 for a coding set."""


class MeasuredStart(SpecModel):
    """Free GPU memory per rank as SGLang logged it at one start (the minimum over the ranks).

    From these two figures the planner predicts `max_total_num_tokens` at any
    `memFractionStatic` or `kvCacheDtype` without another restart."""

    free_before_load_gib: StrictFloat = Field(gt=0.0)
    """`Load weight begin. avail mem=X GB`: free memory before the weights were loaded."""

    free_after_load_gib: StrictFloat = Field(gt=0.0)
    """`Load weight end. ... avail mem=Y GB`: free memory after the weights were loaded."""

    tensor_parallel_size: StrictInt | None = Field(default=None, ge=1, le=64)
    """The tensor-parallel size of the measured start (`tp_size`), if not the job's: the planner
    re-derives the per-rank figures for the job's `tensorParallelSize`."""

    attention_data_parallel_size: StrictInt = Field(default=1, ge=1, le=128)
    """`server.attentionDataParallelSize` of the measured start, if not 1: each GPU then held
    more attention weights, which the planner takes out before planning other layouts."""

    cuda_graph_gib: StrictFloat | None = Field(default=None, ge=0.0)
    """GPU memory that startup took after the KV pool (CUDA graph capture and the like), when
    known: free memory right after the KV pool minus free memory once the server was ready."""

    @model_validator(mode="after")
    def _after_below_before(self) -> MeasuredStart:
        if self.free_after_load_gib >= self.free_before_load_gib:
            raise ValueError(
                f"freeAfterLoadGiB: {self.free_after_load_gib} is not below freeBeforeLoadGiB "
                f"{self.free_before_load_gib}; loading weights takes memory, so the two are "
                "probably swapped"
            )
        return self


class MeasuredLayout(SpecModel):
    """Per-request decode speed measured at one attention layout (with the server full)."""

    attention_data_parallel_size: StrictInt = Field(default=1, ge=1, le=128)
    """`server.attentionDataParallelSize` of the measurement."""

    decode_context_parallel_size: StrictInt = Field(default=1, ge=1, le=128)
    """`server.decodeContextParallelSize` of the measurement."""

    decode_tokens_per_second: StrictFloat = Field(gt=0.0)
    """Decode speed of one request at that layout, in tokens/s."""


class PlanningSpec(SpecModel):
    """Inputs of `draftgen plan` and of the plan figures in status. Changes nothing at run time."""

    gpu_memory_gib: StrictFloat | None = Field(default=None, gt=0.0)
    """Memory of one GPU in GiB (`nvidia-smi` total MiB / 1024; 95.6 for a 96 GB RTX PRO 6000
    Blackwell). Used to estimate free memory when no start was measured."""

    cuda_context_gib: StrictFloat = Field(default=1.5, ge=0.0)
    """GPU memory a rank uses before loading weights (CUDA context, NCCL buffers)."""

    weights_gb: StrictFloat | None = Field(default=None, gt=0.0)
    """Total weights size in GB (10^9 bytes) when the safetensors index cannot be read."""

    load_overhead_gib: StrictFloat = Field(default=3.0, ge=0.0)
    """GPU memory per rank that loading takes beyond weights / tensorParallelSize (replicated
    layers, buffers)."""

    measured: MeasuredStart | None = None
    """Free memory observed at one real start; preferred over the estimate."""

    cuda_graph_gib: StrictFloat | None = Field(default=None, ge=0.0)
    """GPU memory per rank taken after the KV pool (CUDA graphs); when unset, `measured`'s figure
    or 6% of the free memory before loading (5.76 GiB of 94.04 in the Kimi-K2.5 deployment)."""

    min_headroom_gib: StrictFloat = Field(default=2.0, ge=0.0)
    """Free GPU memory per rank, once the server is ready, below which the plan warns: prefill
    activations of a burst must fit there (0.82 GB crashed in prefill)."""

    decode_tokens_per_second: StrictFloat | None = Field(default=None, gt=0.0)
    """Decode speed of one request while the server is full, in tokens/s (about 17 for
    Kimi-K2.5 on 8 × RTX PRO 6000) at the server's own attention layout; the throughput ceiling
    is this times the decodes that fit."""

    measured_layouts: list[MeasuredLayout] = Field(default_factory=list)
    """Per-request decode speeds measured at other attention layouts; the planner's layout
    table uses them instead of its estimate (`decodeTokensPerSecond` is the speed at the
    server's own layout)."""

    mean_prompt_tokens: StrictInt | None = Field(default=None, ge=1)
    """Mean prompt length for datasets without `expected.promptTokens`."""

    mean_completion_tokens: StrictInt | None = Field(default=None, ge=1)
    """Mean completion length for datasets without `expected.completionTokens`."""
