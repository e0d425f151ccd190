"""Host memory for SGLang's hierarchical cache: `--hicache-size` is GB **per tensor-parallel
rank**, so a node gives `sizeGBPerRank × tensorParallelSize` (8 × 300 GB once took a 449 GB host
down). The one place this rule lives: the spec's validation calls `check_host_memory` too.

Part of the spec (its validation is the rule's first user); the planner imports it from here.
"""

from __future__ import annotations

from dataclasses import dataclass


def host_budget_gb(host_memory_gb: int, model_load_gb: int, margin_gb: int) -> int:
    """Host memory the hierarchical cache may use on one node, all ranks together."""
    return host_memory_gb - model_load_gb - margin_gb


@dataclass(frozen=True)
class HostMemoryCheck:
    """A hierarchical-cache size checked against one node's host memory."""

    size_gb_per_rank: int
    tensor_parallel_size: int
    host_memory_gb: int
    model_load_gb: int
    margin_gb: int

    @property
    def total_gb(self) -> int:
        """What the cache asks of the node: size per rank × ranks."""
        return self.size_gb_per_rank * self.tensor_parallel_size

    @property
    def budget_gb(self) -> int:
        return host_budget_gb(self.host_memory_gb, self.model_load_gb, self.margin_gb)

    @property
    def max_safe_gb_per_rank(self) -> int:
        """The largest `sizeGBPerRank` that fits the budget."""
        return max(self.budget_gb // self.tensor_parallel_size, 0)

    @property
    def ok(self) -> bool:
        return self.total_gb <= self.budget_gb

    @property
    def arithmetic(self) -> str:
        """The whole sum, spelled out: `48 GB per rank × 8 ranks = 384 GB ≤ 449 GB host − …`."""
        relation = "≤" if self.ok else ">"
        return (
            f"{self.size_gb_per_rank} GB per rank × {self.tensor_parallel_size} ranks = "
            f"{self.total_gb} GB {relation} {self.host_memory_gb} GB host − {self.model_load_gb} GB "
            f"model loading − {self.margin_gb} GB margin = {self.budget_gb} GB"
        )

    @property
    def problem(self) -> str | None:
        """Why the size is refused and what to set instead; None when it fits."""
        if self.ok:
            return None
        return (
            f"hierarchicalCache.sizeGBPerRank: {self.arithmetic}; the size is per rank, not in "
            f"total: set sizeGBPerRank to at most {self.max_safe_gb_per_rank}"
        )


def check_host_memory(
    size_gb_per_rank: int,
    tensor_parallel_size: int,
    host_memory_gb: int,
    model_load_gb: int,
    margin_gb: int,
) -> HostMemoryCheck:
    """Check `size_gb_per_rank` of hierarchical cache on a node of `host_memory_gb`."""
    return HostMemoryCheck(
        size_gb_per_rank, tensor_parallel_size, host_memory_gb, model_load_gb, margin_gb
    )
