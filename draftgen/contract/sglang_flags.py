"""`sglang.launch_server` flags draftgen passes or reads, and the spec field that owns each.

The operator renders the server's args from these (operator/render/server.py); the spec refuses
an owned flag in `server.extraArgs`, naming its field (draftgen/spec/server.py); the planner reads
unowned ones from `extraArgs` (draftgen/plan/capacity.py); the test harness starts CPU servers
with them (draftgen/testing/sglang.py).
"""

from __future__ import annotations

import enum

from .sglang_options import OPTIONS


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
    TOKENIZER_PATH = "--tokenizer-path", "model.tokenizer"
    HOST = "--host"
    PORT = "--port", "port"
    TP_SIZE = "--tp-size", "tensorParallelSize"
    ATTN_DP_SIZE = "--attn-dp-size", "attentionDataParallelSize"
    """Data-parallel attention: attention groups of tp/d GPUs, one scheduler and KV pool each."""
    DCP_SIZE = "--dcp-size", "decodeContextParallelSize"
    """Decode context parallelism: each request's KV striped over dcp ranks of a TP group."""
    DP_SIZE = "--dp-size"
    """Plain data parallelism inside one server (model copies): read from extraArgs to refuse
    it beside attention data parallelism, which SGLang 0.5.23 does not combine with it."""
    MEM_FRACTION_STATIC = "--mem-fraction-static", "memFractionStatic"
    KV_CACHE_DTYPE = "--kv-cache-dtype", "kvCacheDtype"
    ENABLE_HIERARCHICAL_CACHE = "--enable-hierarchical-cache", "hierarchicalCache.enabled"
    HICACHE_SIZE = "--hicache-size", "hierarchicalCache.sizeGBPerRank"
    """GB of host memory per tensor-parallel rank."""
    MAX_RUNNING_REQUESTS = "--max-running-requests", "maxRunningRequests"
    CHUNKED_PREFILL_SIZE = "--chunked-prefill-size", "chunkedPrefillSize"
    CONTEXT_LENGTH = "--context-length", "contextLength"
    SCHEDULE_CONSERVATIVENESS = "--schedule-conservativeness", "scheduleConservativeness"
    """Scales the KV SGLang reserves for running requests' remaining tokens (new_token_ratio)."""
    TRUST_REMOTE_CODE = "--trust-remote-code", "model.trustRemoteCode"
    ENABLE_METRICS = "--enable-metrics"
    # Multi-node tensor parallelism (one model over a LeaderWorkerSet group; render/leaderworkerset).
    NNODES = "--nnodes", "nodesPerReplica"
    NODE_RANK = "--node-rank", "nodesPerReplica"
    DIST_INIT_ADDR = "--dist-init-addr", "nodesPerReplica"
    """`host:port` of node rank 0, where the ranks of every node meet (torch.distributed)."""
    PP_SIZE = "--pp-size"
    """Pipeline parallelism: read from extraArgs to refuse it across nodes (spec/server.py)."""
    # Read by the planner from extraArgs.
    MAX_TOTAL_TOKENS = "--max-total-tokens"
    CUDA_GRAPH_MAX_BS_DECODE = "--cuda-graph-max-bs-decode"
    """The largest decode batch captured in a CUDA graph (per DP-attention rank)."""
    PAGE_SIZE = "--page-size"
    # CPU test servers (docs in /work/shared/notes/sglang.md).
    DEVICE = "--device"
    ATTENTION_BACKEND = "--attention-backend"
    SAMPLING_BACKEND = "--sampling-backend"
    CUDA_GRAPH_BACKEND_DECODE = "--cuda-graph-backend-decode"
    CUDA_GRAPH_BACKEND_PREFILL = "--cuda-graph-backend-prefill"
    SLEEP_ON_IDLE = "--sleep-on-idle"

    @property
    def dest(self) -> str:
        """The setting SGLang's argparse stores this flag in (`--tp-size` → `tp_size`)."""
        return OPTIONS[self.value]


_BY_DEST: dict[str, SGLangFlag] = {f.dest: f for f in SGLangFlag}

ALIASES: dict[str, SGLangFlag] = {
    opt: _BY_DEST[dest] for opt, dest in OPTIONS.items() if dest in _BY_DEST and opt not in _BY_DEST
}
"""Other spellings SGLang's parser has for the same setting (`--tensor-parallel-size`, `--model`)."""

REFUSED: dict[str, str] = {
    "help": "SGLang would print its help and exit instead of serving",
    "host": "draftgen binds the server to 0.0.0.0 so the generator and the probes reach it",
    "enable_dp_attention": (
        "it is SGLang's older spelling of attention data parallelism (with --dp-size it becomes "
        "--attn-dp-size); set spec.server.attentionDataParallelSize instead"
    ),
    "config": (
        "SGLang would read further flags from that file, where the spec cannot check them; "
        "give them in extraArgs"
    ),
}
"""Unowned settings extraArgs may still not change (by argparse dest), and why."""


def dests_of(arg: str) -> frozenset[str]:
    """The settings SGLang's argparse may take `arg` for, as Python 3.11+'s `_parse_optional`
    reads it: an exact option string, `--opt=value`, or any prefix of option strings
    (allow_abbrev). Empty for values and unknown options. More than one is an ambiguous prefix,
    which SGLang refuses to start with."""
    if len(arg) < 2 or not arg.startswith("-"):
        return frozenset()
    if arg in OPTIONS:
        return frozenset({OPTIONS[arg]})
    name = arg.split("=", 1)[0]
    if name in OPTIONS:
        return frozenset({OPTIONS[name]})
    if arg.startswith("--"):
        return frozenset(dest for opt, dest in OPTIONS.items() if opt.startswith(name))
    # One dash: a short option with its value attached (`-hX`), or a prefix of an option string.
    return frozenset(dest for opt, dest in OPTIONS.items() if opt == arg[:2] or opt.startswith(arg))


def canonical(arg: str) -> SGLangFlag | None:
    """The flag an argument sets (`--flag`, `--flag=value`, an alias or an unambiguous prefix);
    None if unknown, ambiguous, or a flag draftgen does not know."""
    dests = dests_of(arg)
    if len(dests) != 1:
        return None
    return _BY_DEST.get(next(iter(dests)))


def owner_of(arg: str) -> str | None:
    """The spec field that sets this argument's flag, if one does."""
    flag = canonical(arg)
    return flag.owner if flag is not None else None


def spec_path(owner: str) -> str:
    """An owner as the YAML spells it from the top: `tensorParallelSize` → `spec.server.…`."""
    return f"spec.{owner}" if owner.startswith("model.") else f"spec.server.{owner}"


def refusal(arg: str) -> str | None:
    """Why `arg` may not be in `server.extraArgs`, with the fix; None if SGLang may have it."""
    dests = dests_of(arg)
    spelled = arg.split("=", 1)[0]
    if len(dests) > 1:
        matches = sorted(opt for opt, dest in OPTIONS.items() if opt.startswith(spelled))
        shown = ", ".join(matches[:6]) + (", …" if len(matches) > 6 else "")
        return (
            f"{spelled} is an ambiguous prefix of SGLang's flags ({shown}): SGLang refuses to "
            "start with it; spell the flag out (a flag the spec sets goes in its own field)"
        )
    if not dests:
        return None
    dest = next(iter(dests))
    flag = _BY_DEST.get(dest)
    name = flag.value if flag is not None else next(o for o, d in OPTIONS.items() if d == dest)
    reads = name if spelled == name else f"{spelled} (SGLang reads it as {name})"
    if flag is not None and flag.owner is not None:
        field = spec_path(flag.owner)
        return f"{reads} is set by draftgen from {field}; remove it and set {field} instead"
    if dest in REFUSED:
        return f"{reads} may not be set in extraArgs: {REFUSED[dest]}; remove it"
    return None


def value_in(args: list[str], flag: SGLangFlag) -> str | None:
    """The value `args` give `flag` (`--flag V` or `--flag=V`, any alias or prefix); the last one
    wins."""
    found = None
    for i, arg in enumerate(args):
        if canonical(arg) is not flag:
            continue
        if "=" in arg:
            found = arg.split("=", 1)[1]
        elif i + 1 < len(args):
            found = args[i + 1]
    return found
