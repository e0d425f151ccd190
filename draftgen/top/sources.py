"""Where `draftgen top` reads from: the only I/O of the view. Each source's `read()` returns a
`Snapshot`, never raises for a source that does not answer (the screen says so, loudly).

- `DirectorySource`: a local output directory's job manifest (rewritten every few seconds by
  the generator), plus any `--server` pages;
- `MetricsSource`: the generator's `/metrics` URL, plus the servers it names (or `--server`);
- `ClusterSource`: a GenerationJob through the API server: status and spec from the object,
  the generator's and each server replica's `/metrics` through the API server's pod proxy.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

import httpx

from draftgen.contract.generator_cli import ExitCode
from draftgen.contract.layout import job_manifest
from draftgen.contract.metrics import PageError
from draftgen.errors import DraftgenError
from draftgen.output.lock import writer_gone
from draftgen.output.manifest import NewerSchema, read_manifest
from draftgen.timefmt import rfc3339

from . import readings
from .model import ServerReading, Snapshot

TIMEOUT_SECONDS = 3.0
STALE_SECONDS = 60.0
"""A job manifest (or its run's lease heartbeat) older than this while the job is not done: the
generator is not writing."""


class NoCluster(DraftgenError):
    """No kubeconfig or in-cluster credentials to read a GenerationJob with."""

    exit_code = ExitCode.INVALID
    fix = "check the kubeconfig and its context, or watch a metrics URL or an output directory instead"


class Source(Protocol):
    def read(self) -> Snapshot: ...

    def close(self) -> None: ...


def _server_page(client: httpx.Client, url: str) -> list[ServerReading]:
    """A server's readings: one, or one per data-parallel rank."""
    metrics_url = url.rstrip("/") + "/metrics"
    try:
        rsp = client.get(metrics_url)
        rsp.raise_for_status()
        return readings.parse_server_ranks(rsp.text, url)
    except httpx.HTTPError as err:
        return [ServerReading(url, error=f"{type(err).__name__}: {err}"[:200])]
    except PageError as err:
        return [ServerReading(url, error=str(err)[:200])]


class DirectorySource:
    def __init__(self, directory: Path, servers: list[str] | None = None) -> None:
        self.directory = Path(directory)
        self.servers = list(servers or [])
        self._http = httpx.Client(timeout=TIMEOUT_SECONDS)

    def read(self) -> Snapshot:
        now = time.time()
        source = str(self.directory)
        servers = tuple(r for url in self.servers for r in _server_page(self._http, url))
        path = job_manifest(self.directory)
        try:
            data = read_manifest(path)
            if data is None:
                return Snapshot(source, now, servers=servers, error=f"no {path} (yet)")
            got = readings.parse_job_manifest(data)
        except NewerSchema as err:
            return Snapshot(source, now, servers=servers, error=str(err))
        except (OSError, ValueError) as err:  # a torn or foreign file: try again next time
            return Snapshot(source, now, servers=servers, error=f"{path}: {err}"[:300])
        stopped = None
        if not got.job_done:
            # Killed, a generator leaves a manifest that says running: its lease (or the
            # manifest's age) says whether anything still writes it.
            gone = writer_gone(self.directory, STALE_SECONDS)
            age = None if got.updated_at is None else now - got.updated_at
            if gone is None and age is not None and age > STALE_SECONDS:
                gone = f"{path.name} was last written {age:,.0f} s ago"
            if gone is not None:
                stopped = (
                    f"no generator writes {self.directory}: {gone}; the figures are as of "
                    + (rfc3339(got.updated_at) if got.updated_at is not None else "its last write")
                    + " (draftgen generate resumes it)"
                )
        # The figures are as of the manifest's write (every 5 s), not of this read: rates over
        # two reads of the same manifest are unknown, not zero.
        at = got.updated_at if got.updated_at is not None and got.updated_at <= now else now
        return Snapshot(
            source,
            at,
            datasets=tuple(got.datasets),
            servers=servers,
            throughput=got.throughput,
            eta_seconds=got.eta_seconds,
            job_done=got.job_done,
            stopped=stopped,
        )

    def close(self) -> None:
        self._http.close()


class MetricsSource:
    def __init__(self, url: str, servers: list[str] | None = None) -> None:
        self.url = url if url.rstrip("/").endswith("/metrics") else url.rstrip("/") + "/metrics"
        self.servers = list(servers or [])
        self._http = httpx.Client(timeout=TIMEOUT_SECONDS)

    def read(self) -> Snapshot:
        now = time.time()
        try:
            rsp = self._http.get(self.url)
            rsp.raise_for_status()
            page = readings.parse_generator_page(rsp.text)
        except httpx.HTTPError as err:
            return Snapshot(self.url, now, error=f"{type(err).__name__}: {err}"[:300])
        except PageError as err:
            return Snapshot(self.url, now, error=str(err))
        if not page.series:
            return Snapshot(self.url, now, error="the page has no draftgen_* series")
        urls = self.servers or page.servers
        return Snapshot(
            self.url,
            now,
            datasets=tuple(page.datasets),
            servers=tuple(r for u in urls for r in _server_page(self._http, u)),
            throughput=page.throughput,
            eta_seconds=page.eta_seconds,
            job_done=page.job_done,
        )

    def close(self) -> None:
        self._http.close()


class ClusterSource:
    """A GenerationJob `name` in `namespace`, read with the operator's own API client."""

    def __init__(self, name: str, namespace: str, kube: Any = None) -> None:
        from kubernetes.config import ConfigException

        from draftgen.controller.kube import Kube

        self.name = name
        self.namespace = namespace
        if kube is None:
            # One attempt, a short timeout: the next refresh is the retry, and a pod that does
            # not answer must not freeze the screen.
            try:
                kube = Kube.from_environment(attempts=1, timeout=TIMEOUT_SECONDS)
            except (ConfigException, OSError) as err:
                raise NoCluster(f"gj/{name}: no cluster credentials: {err}") from None
        self.kube = kube
        self.source = f"gj/{name} -n {namespace}"

    def _proxy(self, pod: str, port: int, path: str) -> str:
        from draftgen.controller import kube as k

        return self.kube.get_text(k.path("Pod", self.namespace, f"{pod}:{port}", f"proxy/{path}"))

    def _pods(self, component: str) -> list[dict[str, Any]]:
        from draftgen.controller import names

        pods = self.kube.list("Pod", self.namespace, names.selector(self.name, component))
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        return sorted(running, key=lambda p: p["metadata"]["name"])

    def read(self) -> Snapshot:
        from draftgen.controller.kube import KubeError

        now = time.time()
        try:
            job = self.kube.get("GenerationJob", self.namespace, self.name)
        except KubeError as err:
            return Snapshot(self.source, now, error=str(err)[:300])
        if job is None:
            return Snapshot(self.source, now, error="no such GenerationJob")
        spec = job.get("spec") or {}
        status = job.get("status") or {}
        budgets = readings.spec_budgets(job)
        notes: list[str] = []
        page = self._generator_page(spec, notes)
        if page is not None and page.series:
            datasets = readings.merge_spec(page.datasets, budgets)
            throughput, eta, done = page.throughput, page.eta_seconds, page.job_done
        else:
            # The operator's last scrape, as the status holds it (no truncation there).
            datasets = readings.merge_spec(readings.status_datasets(job), budgets)
            throughput = status.get("throughputTokensPerSecond")
            eta = status.get("etaSeconds")
            done = status.get("phase") == "Succeeded"
            if status.get("datasets"):
                notes.append("counts from the GenerationJob's status (the operator's last read)")
            else:
                datasets = []
        return Snapshot(
            self.source,
            now,
            datasets=tuple(datasets),
            servers=tuple(self._servers(spec)),
            throughput=throughput if isinstance(throughput, int | float) else None,
            eta_seconds=eta if isinstance(eta, int | float) else None,
            job_done=done,
            phase=status.get("phase"),
            notes=tuple(notes),
        )

    def _generator_page(
        self, spec: dict[str, Any], notes: list[str]
    ) -> readings.GeneratorPage | None:
        from draftgen.controller.kube import KubeError
        from draftgen.spec.runtime import GeneratorSpec

        port = (spec.get("generator") or {}).get("metricsPort") or GeneratorSpec().metrics_port
        try:
            pods = self._pods("generator")
        except KubeError as err:
            notes.append(f"generator pods not listed: {err}"[:200])
            return None
        if not pods:
            notes.append("no running generator pod")
            return None
        pod = pods[0]["metadata"]["name"]
        try:
            return readings.parse_generator_page(self._proxy(pod, int(port), "metrics"))
        except (KubeError, PageError) as err:
            notes.append(f"generator metrics via the pod proxy ({pod}:{port}): {err}"[:240])
            return None

    def _servers(self, spec: dict[str, Any]) -> list[ServerReading]:
        from draftgen.controller import names
        from draftgen.controller.kube import KubeError
        from draftgen.spec.server import ServerSpec

        port = (spec.get("server") or {}).get("port") or ServerSpec.model_fields["port"].default
        try:
            pods = self._pods("server")
        except KubeError as err:
            return [ServerReading("servers", error=str(err)[:200])]
        out = []
        for pod in pods:
            name = pod["metadata"]["name"]
            replica = (pod["metadata"].get("labels") or {}).get(names.REPLICA_LABEL)
            label = f"replica {replica} ({name})" if replica is not None else name
            try:
                got = readings.parse_server_ranks(self._proxy(name, int(port), "metrics"), label)
            except (KubeError, PageError) as err:
                got = [ServerReading(label, error=str(err)[:200])]
            out.extend(got)
        return out

    def close(self) -> None:
        self.kube.close()
