"""Capacity planner: KV capacity, concurrency, host memory, headroom and ETA.

The package imports nothing eagerly: `draftgen.spec` uses `draftgen.plan.hostmem`, and the
planner itself uses `draftgen.spec`. `plan_status` and `build_plan` load on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_plan", "plan_status"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import planner

        return getattr(planner, name)
    raise AttributeError(name)
