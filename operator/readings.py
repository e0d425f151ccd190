"""Progress as the generator reports it on its metrics endpoint (docs/metrics.md), and the
server's KV capacity from SGLang's `/get_server_info`.

Parsing is pure (text in, typed progress out); the two fetchers are the only I/O.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import httpx

from draftgen.contract import metrics
from draftgen.contract.server_info import parse_server_info
from draftgen.spec import DatasetProgress, GenerationJobSpec, GenerationJobStatus
from draftgen.timefmt import format_duration

from . import names, observe


# One client for every fetch, shared by kopf's worker threads: `httpx.get` builds a client per
# call, and its TLS context alone costs ~17 ms of CPU (with the GIL held) — per job, per poll.
# No keep-alive: pods come and go, and a pooled connection to a vanished pod would sit out the
# whole timeout where a new connection is refused at once.
@functools.cache
def _http() -> httpx.Client:
    return httpx.Client(limits=httpx.Limits(max_keepalive_connections=0))


@dataclasses.dataclass
class GeneratorProgress:
    """The generator's own figures, summed over the metric labels."""

    datasets: list[DatasetProgress]
    throughput_tokens_per_second: float | None = None
    eta_seconds: float | None = None
    job_done: bool = False

    @property
    def completion_tokens(self) -> int:
        return sum(d.completion_tokens for d in self.datasets)

    def percent(self) -> str:
        """Completion tokens against the total budget, when every dataset has one."""
        budgets = [d.budget_completion_tokens for d in self.datasets]
        if not self.datasets:
            return ""
        if all(b for b in budgets):
            done = sum(
                min(d.completion_tokens, d.budget_completion_tokens or 0) for d in self.datasets
            )
            total = sum(b or 0 for b in budgets)
            return f"{100 * done // total}%"
        finished = sum(1 for d in self.datasets if d.done)
        return f"{finished}/{len(self.datasets)} datasets"


def parse_metrics(text: str) -> GeneratorProgress:
    """The generator's page (read by the contract's parser) as the status's per-dataset
    progress, in name order."""
    page = metrics.read_generator_page(text)
    datasets = []
    for d in sorted(page.datasets, key=lambda d: d.name):
        b = d.budget_completion_tokens
        overshoot = None
        if b:
            overshoot = round(max(0, d.completion_tokens - b) * 100.0 / b, 3)
        datasets.append(
            DatasetProgress(
                name=d.name,
                samples=d.samples,
                prompt_tokens=d.prompt_tokens,
                completion_tokens=d.completion_tokens,
                budget_completion_tokens=b,
                done=d.done,
                overshoot_percent=overshoot,
                rejects=d.rejects,
            )
        )
    return GeneratorProgress(
        datasets=datasets,
        throughput_tokens_per_second=page.throughput,
        eta_seconds=page.eta_seconds,
        job_done=bool(page.job_done),
    )


def _get(host: str, port: int, path: str, timeout: float) -> httpx.Response | None:
    """GET `path` of a pod, or None when it does not answer (yet) or answers with an error."""
    try:
        rsp = _http().get(f"http://{_host(host)}:{port}{path}", timeout=timeout)
        rsp.raise_for_status()
    except httpx.HTTPError:
        return None
    return rsp


def scrape(host: str, port: int, timeout: float) -> GeneratorProgress | None:
    """The generator's progress, or None when its endpoint does not answer (yet)."""
    rsp = _get(host, port, "/metrics", timeout)
    return None if rsp is None else parse_metrics(rsp.text)


def parse_download(text: str) -> tuple[int, int | None] | None:
    """(bytes done, bytes total or None) from the model download Job's page (contract
    `download_cli`), None when the page has neither."""
    from draftgen.contract import download_cli

    done = total = None
    for family in metrics.families(text):
        for s in family.samples:
            if s.name == download_cli.BYTES_DONE.name:
                done = int(s.value)
            elif s.name == download_cli.BYTES_TOTAL.name and s.value > 0:
                total = int(s.value)
    return None if done is None else (done, total)


def download_progress(host: str, port: int, timeout: float) -> tuple[int, int | None] | None:
    """The model download's bytes done/total, or None when its page does not answer (yet)."""
    rsp = _get(host, port, "/metrics", timeout)
    return None if rsp is None else parse_download(rsp.text)


def server_kv_capacity(host: str, port: int, timeout: float) -> int | None:
    """The server's KV tokens from SGLang's `/get_server_info`: every data-parallel rank's pool
    together (its top-level `max_total_num_tokens` is rank 0's only)."""
    got = server_kv_pools(host, port, timeout)
    return None if got is None else got[0]


def server_kv_pools(host: str, port: int, timeout: float) -> tuple[int | None, list[int]] | None:
    """(the server's KV tokens, each data-parallel rank's pool when it has several; else [])
    from `/get_server_info`, or None when it does not answer."""
    rsp = _get(host, port, "/get_server_info", timeout)
    if rsp is None:
        return None
    try:
        info = parse_server_info(rsp.json())
    except ValueError:  # not JSON; ServerInfoError is a ValueError too
        return None
    pools = [r.kv_tokens for r in info.ranks]
    per_rank = [p for p in pools if p is not None] if len(pools) > 1 else []
    return info.total_kv_tokens, per_rank if len(per_rank) == len(pools) else []


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


# -- what the reconcile reads from the job's pods ----------------------------------------------
def kv_capacity(
    spec: GenerationJobSpec, server_pods: list[dict[str, Any]], timeout: float
) -> tuple[int | None, list[int] | None]:
    """The server's KV capacity, and each data-parallel rank's pool when it has several (else
    None), from the first running leader that answers."""
    # A multi-node group's workers serve no HTTP: ask its leaders only.
    leaders = [
        p
        for p in server_pods
        if ((p.get("metadata") or {}).get("labels") or {}).get(names.ROLE_LABEL)
        != names.WORKER_ROLE
    ]
    for ip in observe.running_pod_ips(leaders):
        got = server_kv_pools(ip, spec.server.port, timeout)
        if got is not None and got[0] is not None:
            return got[0], got[1] or None
    return None, None


def read_into(
    status: GenerationJobStatus,
    spec: GenerationJobSpec,
    pods: list[dict[str, Any]],
    timeout: float,
) -> None:
    """The generator's progress, rate and ETA into `status`, from the first pod that answers."""
    for ip in observe.running_pod_ips(pods):
        got = scrape(ip, spec.generator.metrics_port, timeout)
        if got is None:
            continue
        status.datasets = got.datasets
        status.completion_tokens = got.completion_tokens
        status.progress = got.percent()
        status.throughput_tokens_per_second = got.throughput_tokens_per_second
        status.eta_seconds = got.eta_seconds
        status.eta = format_duration(got.eta_seconds)
        return
