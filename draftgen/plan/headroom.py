"""GPU memory left after the KV pool: what prefill activations of a burst must fit into.

SGLang keeps `free_before_load × (1 − mem_fraction_static)` free when it sizes the pool; CUDA
graph capture then takes part of it. Kimi-K2.5 at 0.93 kept 6.58 GiB, graphs took ~5.76, and
the 0.82 GB left crashed in prefill under a burst of 150 short requests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .kvcache import GiB, KVCapacity, MemoryProfile

# Graph capture took 5.76 of 94.04 GiB in the Kimi-K2.5 deployment: the default estimate.
CUDA_GRAPH_FRACTION_OF_FREE = 0.06

GraphSource = Literal["given", "measured", "estimated"]


@dataclass(frozen=True)
class Headroom:
    """Free memory per rank at one configuration, before and after CUDA graphs."""

    mem_fraction_static: float
    after_pool_gib: float
    cuda_graph_gib: float
    cuda_graph_source: GraphSource
    min_headroom_gib: float

    @property
    def after_graphs_gib(self) -> float:
        """Free once the server is ready: room for prefill activations."""
        return self.after_pool_gib - self.cuda_graph_gib

    @property
    def thin(self) -> bool:
        return self.after_graphs_gib < self.min_headroom_gib

    @property
    def warning(self) -> str | None:
        if not self.thin:
            return None
        return (
            f"memFractionStatic {self.mem_fraction_static}: about "
            f"{max(self.after_graphs_gib, 0):.2f} GiB per GPU left for prefill activations "
            f"after CUDA graphs ({self.cuda_graph_source} {self.cuda_graph_gib:.2f} GiB), below "
            f"{self.min_headroom_gib:.2f} GiB; a burst of prompts can crash the server out of "
            "memory (0.82 GB did at 0.93); lower memFractionStatic"
        )


def cuda_graph_estimate(
    profile: MemoryProfile, given_gib: float | None
) -> tuple[float, GraphSource]:
    """Memory graph capture takes per rank: given, seen at a start, or 6% of free memory."""
    if given_gib is not None:
        return given_gib, "given"
    if profile.cuda_graph_gib is not None:
        return profile.cuda_graph_gib, "measured"
    return profile.free_before_load_gib * CUDA_GRAPH_FRACTION_OF_FREE, "estimated"


def headroom(
    profile: MemoryProfile,
    capacity: KVCapacity,
    cuda_graph_gib: float | None = None,
    min_headroom_gib: float = 2.0,
) -> Headroom:
    """Free memory after this pool is allocated (more when `--max-total-tokens` capped it)."""
    after_pool = profile.free_after_load_gib - capacity.tokens * capacity.cell_bytes / GiB
    graphs, source = cuda_graph_estimate(profile, cuda_graph_gib)
    return Headroom(capacity.mem_fraction_static, after_pool, graphs, source, min_headroom_gib)
