"""An async client for SGLang's native HTTP API: `/generate` with `input_ids`, `/abort_request`,
server and model info, `/metrics`, and health. Every failure becomes a typed exception that
says whether a retry can help, so the orchestrator never parses error strings."""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from draftgen.contract.generator_cli import ExitCode
from draftgen.errors import DraftgenError
from draftgen.generator.sglang.health import HEALTH_PATH, Probe, wait_until_healthy
from draftgen.redact import redact_url
from draftgen.spec import SamplingSpec


class SGLangError(DraftgenError):
    """A request to an SGLang server failed."""

    exit_code = ExitCode.UNEXPECTED
    fix = "see the server's log for the request named"

    kind = "error"
    """Label for `draftgen_errors_total{kind}`."""

    retryable = False
    """True when the same request may succeed later (the server restarts, a queue drains)."""


class ServerUnavailable(SGLangError):
    """The server could not be reached, or answered 5xx/503 (starting, restarting, overloaded)."""

    exit_code = ExitCode.SERVERS_DOWN
    fix = "check that the server runs and --server reaches it"

    kind = "connect"
    retryable = True

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        if status is not None:
            self.kind = "http_5xx"


class RequestTimeout(SGLangError):
    """No answer within the request timeout."""

    exit_code = ExitCode.SERVERS_DOWN
    fix = "check the server's load; a busy server answers later"

    kind = "timeout"
    retryable = True


class BadResponse(SGLangError):
    """The server refused the request (4xx) or answered something that is not a generation.
    Retrying the same request will not help."""

    exit_code = ExitCode.INTEGRITY
    fix = "check the request named against the server's version and flags (its log says why)"

    kind = "bad_response"

    def __init__(self, message: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body

    @property
    def prompt_too_long(self) -> bool:
        text = (str(self) + self.body).lower()
        return "longer than" in text or "context length" in text or "too long" in text


class Aborted(SGLangError):
    """The server ended the generation with `finish_reason.type == "abort"` (asked for through
    `/abort_request`, or its own decision, e.g. out of memory). The partial output is never kept."""

    exit_code = ExitCode.UNEXPECTED
    fix = "check the server's log for why it aborted (memory, a restart)"

    kind = "abort"
    retryable = True

    def __init__(self, message: str, completion_tokens: int = 0) -> None:
        super().__init__(message)
        self.completion_tokens = completion_tokens


@dataclass(frozen=True, slots=True)
class Generation:
    """One finished generation, exactly as the server returned it."""

    output_ids: list[int]
    finish_reason: str
    """`stop` or `length`."""
    matched_stop: int | str | None
    prompt_tokens: int
    cached_tokens: int
    e2e_latency: float
    """Seconds, as the server measured it (0 when absent)."""
    meta_info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ServerLoad:
    """The live gauges of one server's `/metrics` that admission reads."""

    num_running_reqs: float = 0.0
    num_queue_reqs: float = 0.0
    token_usage: float = 0.0
    """KV pool in use, 0–1."""
    max_total_num_tokens: float | None = None
    gen_throughput: float = 0.0
    new_token_ratio: float | None = None
    """What the server reserves of each running request's remaining tokens (admission)."""
    at: float = 0.0
    """`time.monotonic()` when read."""
    ranks: dict[int, ServerLoad] = field(default_factory=dict, compare=False)
    """Each data-parallel rank's own gauges (its `dp_rank` label), when the server runs several
    schedulers: one KV pool each, which the figures above (the largest) do not tell apart."""


def sampling_params(spec: SamplingSpec, sample_id: str) -> dict[str, Any]:
    """The `sampling_params` of one request: every field explicit, never a server default
    (SGLang's `max_new_tokens` defaults to 128), special tokens kept, stops untrimmed."""
    params: dict[str, Any] = {
        "max_new_tokens": spec.max_new_tokens,
        "temperature": spec.temperature,
        "top_p": spec.top_p,
        "top_k": spec.top_k,
        "min_p": spec.min_p,
        "skip_special_tokens": False,
        "no_stop_trim": True,
    }
    if spec.stop_token_ids:
        params["stop_token_ids"] = list(spec.stop_token_ids)
    if spec.seed is not None:
        # A stable per-sample offset: the same sample draws the same way on every run.
        offset = int.from_bytes(hashlib.sha256(sample_id.encode()).digest()[:4], "big") % 1_000_003
        params["sampling_seed"] = (spec.seed + offset) % (2**63)
    return params


def parse_metrics(text: str) -> dict[str, float]:
    """`sglang:` gauges of a Prometheus text page, by name without the prefix. A gauge reported
    with several label sets (ranks, pools) keeps the largest value, which is the binding one."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith("sglang:"):
            continue
        name_part, _, value_part = line.rpartition(" ")
        name = name_part.split("{", 1)[0].strip()[len("sglang:") :]
        try:
            value = float(value_part)
        except ValueError:
            continue
        out[name] = max(out.get(name, value), value)
    return out


def parse_rank_metrics(text: str) -> dict[int, dict[str, float]]:
    """`sglang:` gauges by data-parallel rank (the `dp_rank` label; series without it are left
    out), each as `parse_metrics` reads a page: by name, the largest over other label sets."""
    out: dict[int, dict[str, float]] = {}
    for line in text.splitlines():
        if not line.startswith("sglang:") or "dp_rank=" not in line:
            continue
        name_part, _, value_part = line.rpartition(" ")
        rank = _DP_RANK.search(name_part)
        try:
            value = float(value_part)
        except ValueError:
            continue
        if rank is None:
            continue
        values = out.setdefault(int(rank.group(1)), {})
        name = name_part.split("{", 1)[0].strip()[len("sglang:") :]
        values[name] = max(values.get(name, value), value)
    return out


_DP_RANK = re.compile(r'[{,]\s*dp_rank="(\d+)"')


def load_from_metrics(
    values: dict[str, float], at: float, ranks: dict[int, dict[str, float]] | None = None
) -> ServerLoad:
    return ServerLoad(
        num_running_reqs=values.get("num_running_reqs", 0.0),
        num_queue_reqs=values.get("num_queue_reqs", 0.0),
        token_usage=values.get("token_usage", 0.0),
        max_total_num_tokens=values.get("max_total_num_tokens"),
        gen_throughput=values.get("gen_throughput", 0.0),
        new_token_ratio=values.get("new_token_ratio"),
        at=at,
        ranks={r: load_from_metrics(v, at) for r, v in (ranks or {}).items()},
    )


def parse_generation(body: Any) -> Generation:
    """A `/generate` answer as a `Generation`; `Aborted` or `BadResponse` otherwise."""
    if not isinstance(body, dict) or not isinstance(body.get("meta_info"), dict):
        raise BadResponse(f"/generate answered without meta_info: {str(body)[:200]}")
    meta = body["meta_info"]
    output_ids = body.get("output_ids")
    if not isinstance(output_ids, list) or not all(isinstance(t, int) for t in output_ids):
        raise BadResponse("/generate answered without a list of integer output_ids")
    finish = meta.get("finish_reason") or {}
    kind = finish.get("type") if isinstance(finish, dict) else str(finish)
    if kind == "abort":
        message = finish.get("message", "") if isinstance(finish, dict) else ""
        raise Aborted(f"the server aborted the generation: {message}", len(output_ids))
    if kind not in ("stop", "length"):
        raise BadResponse(f"/generate answered with an unknown finish_reason {finish!r}")
    return Generation(
        output_ids=output_ids,
        finish_reason=kind,
        matched_stop=finish.get("matched") if isinstance(finish, dict) else None,
        prompt_tokens=int(meta.get("prompt_tokens") or 0),
        cached_tokens=int(meta.get("cached_tokens") or 0),
        e2e_latency=float(meta.get("e2e_latency") or 0.0),
        meta_info=meta,
    )


def _root_cause(err: BaseException) -> str:
    """The innermost error's name and text (httpx says "All connection attempts failed" over
    the `ConnectionRefusedError` that tells what happened)."""
    seen = err
    while seen.__cause__ is not None or seen.__context__ is not None:
        seen = seen.__cause__ or seen.__context__  # type: ignore[assignment]
    return f"{type(seen).__name__}: {seen}"


class SGLangClient:
    """One SGLang server. `transport` replaces the network (an `httpx.AsyncBaseTransport`)."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 3600.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        # `url` may carry credentials: they are used to connect, never shown (logs, records).
        self.url = redact_url(url.rstrip("/"))
        self.timeout = timeout
        self._http = httpx.AsyncClient(
            base_url=url.rstrip("/"),
            transport=transport,
            timeout=httpx.Timeout(timeout, connect=10.0),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> SGLangClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _request(
        self, method: str, path: str, *, json: Any = None, timeout: float | None = None
    ) -> httpx.Response:
        try:
            response = await self._http.request(
                method,
                path,
                json=json,
                timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else timeout,
            )
        except httpx.TimeoutException as err:
            raise RequestTimeout(
                f"{self.url}{path}: no answer within the timeout ({err!r})"
            ) from err
        except (httpx.TransportError, OSError) as err:
            raise ServerUnavailable(f"{self.url}{path}: {type(err).__name__}: {err}") from err
        if response.status_code >= 500:
            raise ServerUnavailable(
                f"{self.url}{path}: HTTP {response.status_code}: {response.text[:300]}",
                status=response.status_code,
            )
        if response.status_code >= 400:
            text = response.text[:1000]
            if "Duplicate request ID" in text:
                # The previous request with this rid is still being torn down on the server.
                raise ServerUnavailable(f"{self.url}{path}: {text}", status=None)
            raise BadResponse(
                f"{self.url}{path}: HTTP {response.status_code}: {text[:300]}",
                status=response.status_code,
                body=text,
            )
        return response

    async def generate(
        self,
        input_ids: list[int],
        sampling: dict[str, Any],
        rid: str,
        dp_rank: int | None = None,
    ) -> Generation:
        """`POST /generate` with token ids in and token ids out; `dp_rank` pins the request to
        that data-parallel rank's scheduler and KV pool (`routed_dp_rank`) instead of SGLang's
        own dispatch."""
        if "max_new_tokens" not in sampling:
            raise ValueError("sampling_params must carry max_new_tokens (SGLang's default is 128)")
        payload = {"input_ids": input_ids, "sampling_params": sampling, "rid": rid, "stream": False}
        if dp_rank is not None:
            payload["routed_dp_rank"] = dp_rank
        response = await self._request("POST", "/generate", json=payload)
        try:
            body = response.json()
        except ValueError as err:
            raise BadResponse(
                f"{self.url}/generate: answer is not JSON: {response.text[:200]}"
            ) from err
        return parse_generation(body)

    async def abort(self, rid: str) -> None:
        """Ask the server to stop one request; it then answers it with `finish_reason` abort."""
        await self._request("POST", "/abort_request", json={"rid": rid}, timeout=30.0)

    async def _json(self, path: str) -> dict[str, Any]:
        response = await self._request("GET", path, timeout=30.0)
        try:
            body = response.json()
        except ValueError as err:
            raise BadResponse(f"{self.url}{path}: answer is not JSON") from err
        if not isinstance(body, dict):
            raise BadResponse(f"{self.url}{path}: answer is not a JSON object")
        return body

    async def server_info(self) -> dict[str, Any]:
        """Every server argument (`max_total_num_tokens`, `max_req_input_len`, ...)."""
        return await self._json("/get_server_info")

    async def models(self) -> dict[str, Any]:
        """The OpenAI-style model list; `data[0].max_model_len` is the effective context length."""
        return await self._json("/v1/models")

    async def model_info(self) -> dict[str, Any]:
        """`model_path`, `tokenizer_path`, `is_generation`, ..."""
        return await self._json("/get_model_info")

    async def tokenize(self, texts: list[str]) -> list[list[int]]:
        """The server's own tokenization of plain texts (no special tokens added)."""
        response = await self._request(
            "POST", "/tokenize", timeout=30.0, json={"prompt": texts, "add_special_tokens": False}
        )
        tokens = response.json().get("tokens")
        if not isinstance(tokens, list) or len(tokens) != len(texts):
            raise BadResponse(f"{self.url}/tokenize: unexpected answer {response.text[:200]}")
        return tokens

    async def metrics(self) -> ServerLoad:
        """The live load from `/metrics` (the server must run with `--enable-metrics`)."""
        response = await self._request("GET", "/metrics", timeout=10.0)
        text = response.text
        return load_from_metrics(parse_metrics(text), time.monotonic(), parse_rank_metrics(text))

    async def probe_health(self) -> Probe:
        """One `GET /health_generate`: the status, or why there was no answer."""
        try:
            response = await self._http.get(HEALTH_PATH, timeout=60.0)
        except (httpx.TransportError, OSError) as err:
            return Probe(None, _root_cause(err))
        return Probe(response.status_code, body=response.text[:200])

    async def healthy(self) -> bool:
        """`/health_generate` answers 200 (the server generated a token)."""
        return (await self.probe_health()).status == 200

    async def wait_healthy(self, timeout: float, interval: float = 1.0) -> None:
        """Wait until `/health_generate` answers 200, saying what is awaited every 15 s;
        `NotSGLang` at once on a 404 or another answer that is not SGLang's;
        `ServerUnavailable` after `timeout` s."""
        await wait_until_healthy(
            self.url, self.probe_health, timeout, interval=interval, on_timeout=ServerUnavailable
        )
