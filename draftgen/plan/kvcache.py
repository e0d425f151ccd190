"""SGLang's own rule for the KV pool size (`max_total_num_tokens`), from free GPU memory.

SGLang (0.5.x, `KVCacheConfigurator._profile_available_bytes`) measures free memory per rank
before loading the weights (B, minimum over the ranks) and again after (A), then keeps
`B × (1 − mem_fraction_static)` free for activations and CUDA graphs:

    rest_GiB             = A − B × (1 − mem_fraction_static)
    max_total_num_tokens = floor(rest_GiB × 2^30 / cell_bytes)   (capped by --max-total-tokens)

So one observed start (A and B, which SGLang logs) predicts the pool at any other fraction or
KV dtype: the weights do not change with either.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError

GiB = 1 << 30

MemorySource = Literal["measured", "log", "estimated"]


class MemoryInputError(DraftgenError, ValueError):
    """Free-memory figures are missing or inconsistent; the message says what to provide."""

    exit_code = ExitCode.INVALID
    fix = "give the GPU memory as the message says (--from-log or --free-*-gib)"

    def report(self) -> list[str]:
        return [f"plan: {self}"]


@dataclass(frozen=True)
class MemoryProfile:
    """Free GPU memory of one rank around weight loading, in GiB (SGLang's "GB")."""

    free_before_load_gib: float
    free_after_load_gib: float
    source: MemorySource
    detail: str = ""
    """How the figures were obtained, for the report."""

    cuda_graph_gib: float | None = None
    """Memory startup took after the KV pool (CUDA graphs), when it was observed."""

    @property
    def weights_gib(self) -> float:
        """What loading took per rank."""
        return self.free_before_load_gib - self.free_after_load_gib

    @property
    def min_mem_fraction_static(self) -> float:
        """Below this fraction the weights leave no room for a KV pool (SGLang refuses to start)."""
        return 1.0 - self.free_after_load_gib / self.free_before_load_gib

    def rest_gib(self, mem_fraction_static: float) -> float:
        """Memory for the KV pool at this fraction."""
        return self.free_after_load_gib - self.free_before_load_gib * (1.0 - mem_fraction_static)

    def mem_fraction_for_tokens(self, tokens: int, cell_bytes: int) -> float:
        """The smallest fraction whose pool holds `tokens`."""
        need_gib = tokens * cell_bytes / GiB
        return 1.0 - (self.free_after_load_gib - need_gib) / self.free_before_load_gib


def measured(
    free_before_load_gib: float,
    free_after_load_gib: float,
    cuda_graph_gib: float | None = None,
    detail: str = "",
    source: MemorySource = "measured",
) -> MemoryProfile:
    """Free memory as SGLang logged it at one start (per rank, minimum over ranks)."""
    if free_after_load_gib > free_before_load_gib:
        raise MemoryInputError(
            f"free memory after loading ({free_after_load_gib} GiB) is not below free memory "
            f"before loading ({free_before_load_gib} GiB); are the two swapped?"
        )
    return MemoryProfile(free_before_load_gib, free_after_load_gib, source, detail, cuda_graph_gib)


def resharded(profile: MemoryProfile, measured_tp: int, tp: int) -> MemoryProfile:
    """`profile`, measured at `measured_tp` ranks, re-derived for `tp`: what loading took per rank
    is the weights' shard, so it scales by `measured_tp / tp` (replicated layers make this an
    estimate; measure a start at `tp` for the exact figure)."""
    if measured_tp == tp:
        return profile
    per_rank = profile.weights_gib * measured_tp / tp
    after = profile.free_before_load_gib - per_rank
    detail = (
        f"{profile.detail}; re-derived from tp {measured_tp} for tp {tp}: "
        f"{profile.weights_gib:.2f} GiB loaded per rank × {measured_tp}/{tp} = {per_rank:.2f} GiB, "
        f"{after:.2f} GiB free after loading (measure a start at tp {tp} for the exact figure)"
    )
    if after <= 0:
        raise MemoryInputError(
            f"the weights do not fit at tensorParallelSize {tp}: {detail}; use more ranks"
        )
    return MemoryProfile(
        profile.free_before_load_gib, after, "estimated", detail, profile.cuda_graph_gib
    )


def estimated(
    gpu_memory_gib: float,
    weights_bytes: int,
    tensor_parallel_size: int,
    cuda_context_gib: float,
    load_overhead_gib: float,
) -> MemoryProfile:
    """Free memory predicted from the GPU size and the weights: each rank holds
    weights / tensorParallelSize plus an overhead."""
    before = gpu_memory_gib - cuda_context_gib
    per_rank = weights_bytes / tensor_parallel_size / GiB
    after = before - per_rank - load_overhead_gib
    detail = (
        f"estimated: {gpu_memory_gib:.2f} GiB GPU − {cuda_context_gib:.2f} GiB context = "
        f"{before:.2f} GiB before loading; − {weights_bytes / 1e9:.1f} GB weights / "
        f"{tensor_parallel_size} ranks ({per_rank:.2f} GiB) − {load_overhead_gib:.2f} GiB "
        f"overhead = {after:.2f} GiB after"
    )
    if after <= 0:
        raise MemoryInputError(
            f"the weights do not fit: {detail}; use more tensor-parallel ranks or larger GPUs"
        )
    return MemoryProfile(before, after, "estimated", detail)


@dataclass(frozen=True)
class KVCapacity:
    """The KV pool SGLang will allocate for one configuration."""

    mem_fraction_static: float
    kv_cache_dtype: str
    cell_bytes: int
    rest_gib: float
    uncapped_tokens: int
    tokens: int
    """`max_total_num_tokens`: the whole server's capacity in tokens."""

    capped_by_max_total_tokens: bool = False

    @property
    def pool_gib(self) -> float:
        return self.tokens * self.cell_bytes / GiB

    @property
    def fits(self) -> bool:
        return self.tokens > 0


def max_total_num_tokens(
    profile: MemoryProfile, mem_fraction_static: float, cell_bytes: int, page_size: int = 1
) -> int:
    """SGLang's pool size before any `--max-total-tokens` cap; 0 when nothing is left."""
    rest = profile.rest_gib(mem_fraction_static)
    if rest <= 0:
        return 0
    tokens = int(rest * GiB // cell_bytes)
    return tokens // page_size * page_size


def kv_capacity(
    profile: MemoryProfile,
    mem_fraction_static: float,
    cell_bytes: int,
    kv_cache_dtype: str,
    max_total_tokens: int | None = None,
    page_size: int = 1,
) -> KVCapacity:
    """The pool at one fraction and KV dtype, capped by `--max-total-tokens` when given."""
    uncapped = max_total_num_tokens(profile, mem_fraction_static, cell_bytes, page_size)
    tokens = min(uncapped, max_total_tokens) if max_total_tokens else uncapped
    return KVCapacity(
        mem_fraction_static=mem_fraction_static,
        kv_cache_dtype=kv_cache_dtype,
        cell_bytes=cell_bytes,
        rest_gib=profile.rest_gib(mem_fraction_static),
        uncapped_tokens=uncapped,
        tokens=tokens,
        capped_by_max_total_tokens=bool(max_total_tokens) and tokens < uncapped,
    )


# --- SGLang's startup log ---------------------------------------------------------------------

_RANK = re.compile(r"\bTP(\d+)\b")
_FLOAT = r"([0-9]+(?:\.[0-9]+)?)"
_PATTERNS = {
    "before": re.compile(r"Load weight begin\. avail mem=" + _FLOAT + " GB"),
    "after": re.compile(r"Load weight end\..*?avail mem=" + _FLOAT + " GB"),
    "pool_end": re.compile(r"Memory pool end\. avail mem=" + _FLOAT + " GB"),
    "graph": re.compile(r"Capture .*?(?:cuda|CUDA) graph end\..*?mem usage=" + _FLOAT + " GB"),
}
_KV_ALLOC = re.compile(
    r"KV Cache is allocated\..*?#tokens: (\d+), (?:KV size: "
    + _FLOAT
    + r" GB|K size: "
    + _FLOAT
    + r" GB, V size: "
    + _FLOAT
    + " GB)"
)
_SCHED = re.compile(r"max_total_num_tokens=(\d+).*?available_(?:gpu|cpu)_mem=" + _FLOAT + " GB")
# Server arguments: `ServerArgs(mem_fraction_static=0.88, ...)` or `{'mem_fraction_static': 0.88}`.
_MEM_FRACTION = re.compile(r"\bmem_fraction_static'?(?:=|: )" + _FLOAT)
_KV_DTYPE = re.compile(r"\bkv_cache_dtype'?(?:=|: )'([a-z0-9_]+)'")
_TP_SIZE = re.compile(r"\btp_size'?(?:=|: )(\d+)")
_MAX_TOTAL_TOKENS = re.compile(r"\bmax_total_tokens'?(?:=|: )(\d+)")


@dataclass(frozen=True)
class StartLog:
    """What one SGLang start logged about memory (GiB per rank; minimum over ranks)."""

    free_before_load_gib: float
    free_after_load_gib: float
    ranks: int
    max_total_num_tokens: int | None = None
    kv_pool_gib: float | None = None
    """Size of the KV pool SGLang allocated (`KV size`, or `K size` + `V size`)."""

    memory_pool_end_gib: float | None = None
    ready_free_gib: float | None = None
    """`available_gpu_mem` once the scheduler started: what is left for activations."""

    cuda_graph_gib: float | None = None
    mem_fraction_static: float | None = None
    kv_cache_dtype: str | None = None
    tp_size: int | None = None
    max_total_tokens: int | None = None
    """`--max-total-tokens` of that start, which capped its pool."""

    def profile(self) -> MemoryProfile:
        detail = (
            f"from an SGLang log: {self.free_before_load_gib:.2f} GiB free before loading, "
            f"{self.free_after_load_gib:.2f} GiB after (minimum over {self.ranks} "
            f"rank{'s' if self.ranks != 1 else ''})"
        )
        return measured(
            self.free_before_load_gib,
            self.free_after_load_gib,
            self.cuda_graph_gib,
            detail,
            source="log",
        )


def parse_start_log(text: str) -> StartLog:
    """Read the memory lines of an SGLang 0.5.x startup log (all ranks' lines may be mixed)."""
    per_rank: dict[str, dict[str, float]] = {key: {} for key in _PATTERNS}
    graph_total: dict[str, float] = {}
    for line in text.splitlines():
        rank_match = _RANK.search(line)
        rank = rank_match.group(1) if rank_match else "0"
        for key, pattern in _PATTERNS.items():
            m = pattern.search(line)
            if not m:
                continue
            value = float(m.group(1))
            if key == "graph":
                graph_total[rank] = graph_total.get(rank, 0.0) + value
            else:
                per_rank[key][rank] = value  # the last start in the log wins
    if not per_rank["before"] or not per_rank["after"]:
        missing = [
            name
            for name, key in (("Load weight begin", "before"), ("Load weight end", "after"))
            if not per_rank[key]
        ]
        raise MemoryInputError(
            f"the log has no `{'` or `'.join(missing)}` line with `avail mem=`; give the log of "
            "the server's start (sglang.launch_server's output from the beginning), or pass "
            "--free-before-load-gib and --free-after-load-gib"
        )
    kv = _KV_ALLOC.findall(text)
    kv_pool = sum(float(x) for x in kv[-1][1:] if x) if kv else None
    sched = _SCHED.findall(text)
    ready_free = float(sched[-1][1]) if sched else None
    tokens = int(sched[-1][0]) if sched else (int(kv[-1][0]) if kv else None)
    pool_end = min(per_rank["pool_end"].values()) if per_rank["pool_end"] else None
    graph = max(graph_total.values()) if graph_total else None
    if pool_end is not None and ready_free is not None:
        graph = max(pool_end - ready_free, 0.0)  # everything taken after the pool, graphs included
    mem_fraction = _last(_MEM_FRACTION, text)
    tp = _last(_TP_SIZE, text)
    cap = _last(_MAX_TOTAL_TOKENS, text)
    return StartLog(
        free_before_load_gib=min(per_rank["before"].values()),
        free_after_load_gib=min(per_rank["after"].values()),
        ranks=len(per_rank["before"]),
        max_total_num_tokens=tokens,
        kv_pool_gib=kv_pool,
        memory_pool_end_gib=pool_end,
        ready_free_gib=ready_free,
        cuda_graph_gib=graph,
        mem_fraction_static=float(mem_fraction) if mem_fraction else None,
        kv_cache_dtype=_last(_KV_DTYPE, text),
        tp_size=int(tp) if tp else None,
        max_total_tokens=int(cap) if cap else None,
    )


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    found = pattern.findall(text)
    return found[-1] if found else None


def relative_error(predicted: float, observed: float) -> float:
    return math.inf if observed == 0 else abs(predicted - observed) / observed
