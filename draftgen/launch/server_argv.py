"""The SGLang server's command line for a spec (`python3 -m sglang.launch_server ARGS`): what the
operator renders into the server's pods and what `draftgen serve` runs, from one definition."""

from __future__ import annotations

from draftgen.contract.model_location import loader_name
from draftgen.contract.sglang_flags import SGLangFlag as F
from draftgen.launch.model_volume import downloads, volume_path
from draftgen.spec import GenerationJobSpec


def server_args(spec: GenerationJobSpec) -> list[str]:
    """`python3 -m sglang.launch_server` arguments for the spec; each flag from one spec field."""
    s = spec.server
    args = [
        F.MODEL_PATH,
        # hf:// weights the download Job put on the models volume are read from there.
        volume_path(spec) if downloads(spec) else loader_name(spec.model.weights),
        F.HOST,
        "0.0.0.0",
        F.PORT,
        str(s.port),
        F.TP_SIZE,
        str(s.tensor_parallel_size),
    ]
    # SGLang 0.5.23's spelling (the older `--enable-dp-attention --dp-size d` is rewritten to it);
    # left out at 1, SGLang's default, so a plain TP server's command line is unchanged.
    if s.attention_data_parallel_size > 1:
        args += [F.ATTN_DP_SIZE, str(s.attention_data_parallel_size)]
    if s.decode_context_parallel_size > 1:
        args += [F.DCP_SIZE, str(s.decode_context_parallel_size)]
    args += [
        F.MEM_FRACTION_STATIC,
        str(s.mem_fraction_static),
        F.KV_CACHE_DTYPE,
        s.kv_cache_dtype,
        F.SCHEDULE_CONSERVATIVENESS,
        str(spec.schedule_conservativeness),
        F.ENABLE_METRICS,
    ]
    if spec.model.tokenizer:
        args += [F.TOKENIZER_PATH, loader_name(spec.model.tokenizer)]
    if spec.model.trust_remote_code:
        args.append(F.TRUST_REMOTE_CODE)
    if s.hierarchical_cache.enabled:
        # --hicache-size is GB of host memory *per tensor-parallel rank* (validated in the spec).
        args += [
            F.ENABLE_HIERARCHICAL_CACHE,
            F.HICACHE_SIZE,
            str(s.hierarchical_cache.size_gb_per_rank),
        ]
    if s.max_running_requests is not None:
        args += [F.MAX_RUNNING_REQUESTS, str(s.max_running_requests)]
    if s.chunked_prefill_size is not None:
        args += [F.CHUNKED_PREFILL_SIZE, str(s.chunked_prefill_size)]
    if s.context_length is not None:
        args += [F.CONTEXT_LENGTH, str(s.context_length)]
    args += list(s.extra_args)
    return [str(a) for a in args]  # plain str, not enum members: YAML dumps only plain str


SGLANG_SETTINGS = {
    # /health must be a cheap liveness check; /health_generate (readiness) still generates.
    "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "0",
}
"""The environment that sets SGLang's behaviour (`draftgen serve` sets it too)."""
