"""`sglang.launch_server` flags draftgen passes or reads, and the spec field that owns each.

The operator renders the server's args from these (operator/render/server.py); the spec refuses
an owned flag in `server.extraArgs`, naming its field (draftgen/spec/server.py); the planner reads
unowned ones from `extraArgs` (draftgen/plan/planner.py); the test harness starts CPU servers
with them (draftgen/testing/sglang.py).
"""

from __future__ import annotations

import enum


class SGLangFlag(enum.StrEnum):
    """A flag of `python3 -m sglang.launch_server`; `owner` is the spec field that sets it (None:
    draftgen sets it itself, or it may be given in `server.extraArgs`)."""

    owner: str | None

    def __new__(cls, flag: str, owner: str | None = None) -> SGLangFlag:
        member = str.__new__(cls, flag)
        member._value_ = flag
        member.owner = owner
        return member

    MODEL_PATH = "--model-path", "model.weights"
    TOKENIZER_PATH = "--tokenizer-path"
    HOST = "--host"
    PORT = "--port", "port"
    TP_SIZE = "--tp-size", "tensorParallelSize"
    MEM_FRACTION_STATIC = "--mem-fraction-static", "memFractionStatic"
    KV_CACHE_DTYPE = "--kv-cache-dtype", "kvCacheDtype"
    ENABLE_HIERARCHICAL_CACHE = "--enable-hierarchical-cache", "hierarchicalCache.enabled"
    HICACHE_SIZE = "--hicache-size", "hierarchicalCache.sizeGBPerRank"
    """GB of host memory per tensor-parallel rank."""
    MAX_RUNNING_REQUESTS = "--max-running-requests", "maxRunningRequests"
    CHUNKED_PREFILL_SIZE = "--chunked-prefill-size", "chunkedPrefillSize"
    CONTEXT_LENGTH = "--context-length", "contextLength"
    TRUST_REMOTE_CODE = "--trust-remote-code"
    ENABLE_METRICS = "--enable-metrics"
    # Read by the planner from extraArgs.
    MAX_TOTAL_TOKENS = "--max-total-tokens"
    PAGE_SIZE = "--page-size"
    # CPU test servers (docs in /work/shared/notes/sglang.md).
    DEVICE = "--device"
    ATTENTION_BACKEND = "--attention-backend"
    SAMPLING_BACKEND = "--sampling-backend"
    CUDA_GRAPH_BACKEND_DECODE = "--cuda-graph-backend-decode"
    CUDA_GRAPH_BACKEND_PREFILL = "--cuda-graph-backend-prefill"
    SLEEP_ON_IDLE = "--sleep-on-idle"


ALIASES: dict[str, SGLangFlag] = {
    "--tp": SGLangFlag.TP_SIZE,
    "--tensor-parallel-size": SGLangFlag.TP_SIZE,
}
"""Other spellings SGLang accepts for the same setting."""


def canonical(arg: str) -> SGLangFlag | None:
    """The flag an argument (`--flag` or `--flag=value`) sets, aliases resolved; None if unknown."""
    name = arg.split("=", 1)[0]
    if name in ALIASES:
        return ALIASES[name]
    try:
        return SGLangFlag(name)
    except ValueError:
        return None


def owner_of(arg: str) -> str | None:
    """The spec field that sets this argument's flag, if one does."""
    flag = canonical(arg)
    return flag.owner if flag is not None else None


def value_in(args: list[str], flag: SGLangFlag) -> str | None:
    """The value `args` give `flag` (`--flag V` or `--flag=V`, any alias); the last one wins."""
    found = None
    for i, arg in enumerate(args):
        if canonical(arg) is not flag:
            continue
        if "=" in arg:
            found = arg.split("=", 1)[1]
        elif i + 1 < len(args):
            found = args[i + 1]
    return found
