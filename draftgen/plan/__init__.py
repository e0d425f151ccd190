"""Capacity planner: KV capacity, concurrency, host memory, headroom and ETA."""
