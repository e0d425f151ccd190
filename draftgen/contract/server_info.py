"""What draftgen reads from SGLang's `/get_server_info` (alias `/server_info`).

The body is every server argument at the top level plus the scheduler's figures
(`max_total_num_tokens`, `max_req_input_len`, ...) and `internal_states`, one entry per
data-parallel rank (`effective_max_running_requests_per_dp`, and in some versions the KV pool
`max_total_num_tokens` only there). The generator sizes its admission with it; the operator shows
the KV pool in `status.server.maxTotalNumTokens`.

With data parallelism (`--dp-size d`, or data-parallel attention) SGLang runs d schedulers with a
KV pool each; the top-level `max_total_num_tokens` is rank 0's pool only, and each entry of
`internal_states` carries its own rank's (`memory_usage.token_capacity`). The entries carry no
rank number: the i-th is taken as rank i (the pools are normally equal; the `dp_rank`-labelled
`sglang:max_total_num_tokens` on `/metrics` tells them apart when they are not).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError


class ServerInfoError(DraftgenError, ValueError):
    """The answer is not a JSON object, so it holds none of the figures."""

    exit_code = ExitCode.INTEGRITY
    fix = "point --server at an SGLang server of a supported version"


@dataclass(frozen=True)
class ServerInfo:
    """The figures of one server; None where the server does not report a usable number."""

    kv_tokens: int | None
    """`max_total_num_tokens`: the KV pool in tokens."""
    max_running_requests: int | None
    """The first rank's `effective_max_running_requests_per_dp`, else `max_running_requests`."""
    max_prompt_tokens: int | None
    """The longest prompt the server accepts: `max_req_input_len - 1` (SGLang refuses a prompt of
    `max_req_input_len` tokens or more, `managers/utils.py: validate_input_length`)."""
    skip_tokenizer_init: bool
    """The server runs without a tokenizer (`--skip-tokenizer-init`): `/tokenize` cannot work."""
    context_length: int | None = None
    """Prompt plus completion at most; SGLang refuses a request whose prompt plus
    `max_new_tokens` exceeds it. `context_length` here when the server was started with
    `--context-length`, else `max_model_len` from `/v1/models` (see `model_len`)."""
    ranks: tuple[RankInfo, ...] = ()
    """One per data-parallel rank, when `internal_states` lists more than one (each its own
    scheduler and KV pool); empty for a server with one."""

    @property
    def total_kv_tokens(self) -> int | None:
        """The server's KV tokens: every data-parallel rank's pool together (a request lives in
        one of them), or its one pool. What `status.server.maxTotalNumTokens` shows."""
        pools = [r.kv_tokens for r in self.ranks]
        if pools and all(p is not None for p in pools):
            return sum(p for p in pools if p is not None)
        return self.kv_tokens


@dataclass(frozen=True)
class RankInfo:
    """One data-parallel rank's scheduler, from its `internal_states` entry."""

    kv_tokens: int | None
    """Its own KV pool (`memory_usage.token_capacity`)."""
    max_running_requests: int | None
    """`effective_max_running_requests_per_dp`."""


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not (math.isfinite(value) and value > 0):  # JSON may carry Infinity and NaN
        return None
    return int(value)


def _first_rank(states: list[dict[str, Any]], key: str) -> int | None:
    for state in states:
        value = _positive_int(state.get(key))
        if value is not None:
            return value
    return None


def parse_server_info(body: Any) -> ServerInfo:
    """The figures in a `/get_server_info` body (the parsed JSON); `ServerInfoError` when it is
    not a JSON object."""
    if not isinstance(body, dict):
        raise ServerInfoError(f"/get_server_info answered {type(body).__name__}, not a JSON object")
    raw_states = body.get("internal_states")
    states = [s for s in raw_states if isinstance(s, dict)] if isinstance(raw_states, list) else []
    return ServerInfo(
        # Some versions report the KV pool only per data-parallel rank.
        kv_tokens=_positive_int(body.get("max_total_num_tokens"))
        or _first_rank(states, "max_total_num_tokens"),
        max_running_requests=_positive_int(
            (states[0] if states else {}).get("effective_max_running_requests_per_dp")
        )
        or _positive_int(body.get("max_running_requests")),
        max_prompt_tokens=_below(_positive_int(body.get("max_req_input_len"))),
        skip_tokenizer_init=bool(body.get("skip_tokenizer_init")),
        context_length=_positive_int(body.get("context_length")),
        ranks=tuple(_rank(s) for s in states) if len(states) > 1 else (),
    )


def _rank(state: dict[str, Any]) -> RankInfo:
    memory = state.get("memory_usage")
    capacity = memory.get("token_capacity") if isinstance(memory, dict) else None
    return RankInfo(
        kv_tokens=_positive_int(capacity) or _positive_int(state.get("max_total_num_tokens")),
        max_running_requests=_positive_int(state.get("effective_max_running_requests_per_dp")),
    )


def model_len(body: Any) -> int | None:
    """`max_model_len` of the first model in a `/v1/models` body: SGLang's effective context
    length, which `/get_server_info` leaves out (its `context_length` is the launch argument, null
    unless `--context-length` was given)."""
    data = body.get("data") if isinstance(body, dict) else None
    first = data[0] if isinstance(data, list) and data else None
    return _positive_int(first.get("max_model_len")) if isinstance(first, dict) else None


def _below(limit: int | None) -> int | None:
    """The largest length SGLang accepts under an exclusive limit."""
    return limit - 1 if limit is not None and limit > 1 else None


def context_problem(info: ServerInfo, completions: dict[str, int]) -> str | None:
    """Why no request of some dataset can fit this server's context, with the fix; `completions`
    maps each dataset's YAML path to its `maxNewTokens`. A request needs at least one prompt
    token, so `maxNewTokens` must stay below `context_length`."""
    limit = info.context_length
    if limit is None:
        return None
    too_long = {path: n for path, n in completions.items() if n >= limit}
    if not too_long:
        return None
    listed = ", ".join(f"{path}.maxNewTokens {n}" for path, n in too_long.items())
    return (
        f"the server's context length is {limit} tokens (prompt plus completion) and {listed} "
        f"leaves no room for a prompt: SGLang would refuse every request; lower maxNewTokens "
        f"below {limit} (spec.sampling or the dataset's sampling), or serve a longer context "
        "(spec.server.contextLength)"
    )
