"""SGLang's admission constants (0.5.23), for everything that reasons about how SGLang fills its
KV pool: the benchmarks' simulated server (bench/kv_server.py) and `draftgen plan`'s report.

From the installed source (`sglang/srt/`): `environ.py` 646-650 (the SGLANG_* defaults below),
`managers/scheduler_components/new_token_ratio_tracker.py` (the ratio), and
`managers/schedule_policy.py` / `mem_cache/prefill_budget.py` (how it is charged):
- a request being admitted is charged prompt + 1 page + min(max_new_tokens − generated, CLIP);
- every running request is charged new_token_ratio × min(max_new_tokens − generated, CLIP)
  (ratio 1 for `ignore_eos`);
- the ratio starts at INIT × `--schedule-conservativeness` (at most 1), decays linearly to
  MIN_FACTOR of that over DECAY_STEPS decode steps, and after a retraction is re-estimated from
  the running batch: (decoded + RETRACT_DECODE_STEPS × running) / (Σ max_new_tokens + 1).
"""

from __future__ import annotations

INIT_NEW_TOKEN_RATIO = 0.7
"""SGLANG_INIT_NEW_TOKEN_RATIO."""
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
"""SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR: the floor, as a share of the initial ratio."""
NEW_TOKEN_RATIO_DECAY_STEPS = 600
"""SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS: decode steps from the initial ratio to the floor."""
RETRACT_DECODE_STEPS = 20
"""SGLANG_RETRACT_DECODE_STEPS: tokens per request the estimate after a retraction adds."""
CLIP_MAX_NEW_TOKENS = 4096
"""SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION: no request is charged more than this for its output."""
DEFAULT_SCHEDULE_CONSERVATIVENESS = 1.0
"""`--schedule-conservativeness` when not given."""


def new_token_ratio_range(conservativeness: float) -> tuple[float, float]:
    """(initial, floor) of SGLang's new_token_ratio at this `--schedule-conservativeness`."""
    init = min(INIT_NEW_TOKEN_RATIO * conservativeness, 1.0)
    return init, min(init * MIN_NEW_TOKEN_RATIO_FACTOR, 1.0)
