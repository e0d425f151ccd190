"""Capacity planner: KV capacity, concurrency, host memory, headroom and ETA."""

from .planner import build_plan, plan_status

__all__ = ["build_plan", "plan_status"]
