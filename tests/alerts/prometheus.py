"""A real Prometheus server (Debian's `prometheus` binary) for tests: loopback only, its config
and data in a temporary directory, a 1-second scrape interval, queried over its HTTP API."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from draftgen.testing.sglang import free_port

PROMETHEUS = shutil.which("prometheus")


class PrometheusServer:
    """`with PrometheusServer(tmp, targets) as prom: prom.query_range(expr, start, end)`.

    `targets` maps a job name to (host:port, extra target labels); the labels stand in for what
    the chart's PodMonitors attach in a cluster (namespace, pod, generationjob); `honor_labels`
    per job stands in for a PodMonitor's `honorLabels`.
    """

    def __init__(
        self,
        workdir: Path,
        targets: dict[str, tuple[str, dict[str, str]]],
        rule_files: list[Path] = (),
        metric_relabel_configs: dict[str, list[dict]] | None = None,
        honor_labels: dict[str, bool] | None = None,
    ) -> None:
        if PROMETHEUS is None:
            raise RuntimeError("prometheus is not installed: run `make system`")
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {
                "scrape_interval": "1s",
                "evaluation_interval": "1s",
                "scrape_timeout": "1s",
            },
            "rule_files": [str(p) for p in rule_files],
            "scrape_configs": [
                {
                    "job_name": job,
                    "static_configs": [{"targets": [target], "labels": labels}],
                    "metric_relabel_configs": (metric_relabel_configs or {}).get(job, []),
                    "honor_labels": (honor_labels or {}).get(job, False),
                }
                for job, (target, labels) in targets.items()
            ],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self._proc: subprocess.Popen | None = None
        self._log = None

    def __enter__(self) -> PrometheusServer:
        self._log = open(self.workdir / "prometheus.log", "wb")
        self._proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={self.workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log()}")
            try:
                if httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"prometheus did not become ready: {self.log()}")

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._log:
            self._log.close()

    def log(self) -> str:
        path = self.workdir / "prometheus.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def _get(self, path: str, **params: Any) -> Any:
        response = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=30)
        body = response.json()
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body.get('error') or body}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        return self._get("query", query=expr)["result"]

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict]:
        return self._get("query_range", query=expr, start=start, end=end, step=step)["result"]

    def targets(self) -> list[dict[str, Any]]:
        return self._get("targets")["activeTargets"]

    def wait_for(self, expr: str, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Poll until the instant query returns a non-empty result."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if result or time.monotonic() > deadline:
                return result
            time.sleep(0.5)
