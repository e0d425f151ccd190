"""`draftgen download` (the model download Job's command) with the real `huggingface_hub` client,
pointed by `HF_ENDPOINT` at a local file server that answers the hub's routes for one repository
(revision info, file tree, HEAD/GET of `resolve/` with byte ranges). No network.

Resume is shown the way a cluster causes it: the command is SIGKILLed halfway through a file,
then run again; the second run skips every file already complete and fetches the others. The
unit is the file: huggingface_hub 2.x never continues another process's part file, so the file
cut off is fetched again from its start (asserted, so a change there shows), and the part the
kill left is removed. What only the real hub shows (Xet storage, gated
repositories, redirects to a CDN, rate limits) is listed in docs/operator.md."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from draftgen.contract.download_cli import DownloadArgs
from draftgen.contract.generator_cli import ExitCode
from draftgen.controller.readings import parse_download
from draftgen.testing.sglang import free_port
from tests.operator.harness import wait_for

REPO_ID = "draftgen-test/tiny"
COMMIT = "a" * 40


class LocalHub:
    """The hub's routes for `REPO_ID` at `COMMIT`, serving `files`; logs every request, and can
    stall mid-file (to be killed there) after `stall_after` bytes of `stall_file`."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.log: list[tuple[str, str, str]] = []  # (method, path, Range header)
        self.stall_file: str | None = None
        self.stall_after = 0
        self.stalled = threading.Event()
        self.release = threading.Event()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _json(self, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _file(self, head: bool) -> None:
                name = self.path.split(f"/{REPO_ID}/resolve/", 1)[1].split("/", 1)[1]
                data = hub.files.get(name)
                if data is None:
                    self.send_error(404)
                    return
                start = 0
                rng = self.headers.get("Range") or ""
                if rng.startswith("bytes="):
                    start = int(rng[6:].split("-")[0] or 0)
                self.send_response(206 if start else 200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("Content-Length", str(len(data) - start))
                if start:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.end_headers()
                if head:
                    return
                body = data[start:]
                if name == hub.stall_file and not start:
                    self.wfile.write(body[: hub.stall_after])
                    self.wfile.flush()
                    hub.stalled.set()
                    hub.release.wait(60)  # the client is killed meanwhile
                    return
                self.wfile.write(body)

            def do_HEAD(self) -> None:
                hub.log.append(("HEAD", self.path, self.headers.get("Range") or ""))
                self._file(head=True)

            def do_GET(self) -> None:
                hub.log.append(("GET", self.path, self.headers.get("Range") or ""))
                path = self.path.split("?", 1)[0]
                if path.startswith(f"/api/models/{REPO_ID}/revision/"):
                    self._json(
                        {
                            "id": REPO_ID,
                            "sha": COMMIT,
                            "siblings": [{"rfilename": n} for n in hub.files],
                        }
                    )
                elif path.startswith(f"/api/models/{REPO_ID}/tree/"):
                    self._json(
                        [
                            {
                                "type": "file",
                                "path": name,
                                "size": len(data),
                                "oid": hashlib.sha1(data).hexdigest(),
                                "lfs": {
                                    "oid": hashlib.sha256(data).hexdigest(),
                                    "size": len(data),
                                    "pointerSize": 134,
                                },
                            }
                            for name, data in hub.files.items()
                        ]
                    )
                elif f"/{REPO_ID}/resolve/" in path:
                    self._file(head=False)
                else:
                    # What the hub answers for a repository that does not exist (or is hidden).
                    self.send_response(401)
                    self.send_header("X-Error-Code", "RepoNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def fetched(self) -> dict[str, str]:
        """File → Range header of each file GET (the bytes actually asked for)."""
        return {
            p.split(f"/{REPO_ID}/resolve/", 1)[1].split("/", 1)[1]: r
            for m, p, r in self.log
            if m == "GET" and f"/{REPO_ID}/resolve/" in p
        }

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


FILES = {
    "config.json": b'{"model_type": "tiny"}',
    "model-00001-of-00002.safetensors": os.urandom(300_000),
    # Past huggingface_hub's 10 MiB write chunk, so a kill leaves bytes in the partial file.
    "model-00002-of-00002.safetensors": os.urandom(14_000_000),
    "tokenizer.json": b'{"version": "1.0"}',
}


@pytest.fixture
def hub():
    server = LocalHub(dict(FILES))
    yield server
    server.close()


def _command(hub: LocalHub, to: Path, **extra) -> tuple[list[str], dict[str, str]]:
    argv = DownloadArgs(repo=REPO_ID, to=str(to), revision="main", **extra).argv()
    env = {
        **os.environ,
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(to.parent / "hf-home"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_ETAG_TIMEOUT": "5",
    }
    env.pop("HF_HUB_OFFLINE", None)
    return [sys.executable, "-m", "draftgen.cli", *argv], env


def test_a_download_killed_mid_file_resumes_fetching_only_what_is_missing(hub, tmp_path):
    to = tmp_path / "models" / "hub" / REPO_ID
    port = free_port()
    report = tmp_path / "termination-log"
    # Files are fetched in a pool: let the second weights file stall halfway, then kill.
    hub.stall_file, hub.stall_after = "model-00002-of-00002.safetensors", 11_000_000
    argv, env = _command(hub, to, metrics_port=port, report=str(report))
    first = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert hub.stalled.wait(60), first.communicate(timeout=5)[0]

        def progress():
            rsp = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)
            got = parse_download(rsp.text)
            return got if got and got[0] >= 300_000 + 10 * 1024 * 1024 else None

        done, total = wait_for(progress, "download progress on the metrics page")
        assert total == sum(len(d) for d in FILES.values()) and 0 < done < total
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
    partial = list(to.rglob("*.incomplete"))
    assert partial and partial[0].stat().st_size > 0, list(to.rglob("*"))
    before = {n for n in FILES if (to / n).exists()}
    assert "model-00002-of-00002.safetensors" not in before
    assert not report.exists()  # killed: no report

    hub.log.clear()
    hub.stall_file = None
    argv, env = _command(hub, to, report=str(report))
    again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == ExitCode.OK, again.stderr[-3000:]
    for name, data in FILES.items():
        assert (to / name).read_bytes() == data, name
    fetched = hub.fetched()
    # Complete files are not fetched again; the cut-off one is fetched again, from its start.
    assert not before & set(fetched), (before, fetched)
    assert set(fetched) == set(FILES) - before
    assert fetched["model-00002-of-00002.safetensors"] in ("", "bytes=0-")
    assert "removed" in again.stdout and not list(to.rglob("*.incomplete"))
    assert json.loads(report.read_text()) == {"commit": COMMIT, "bytes": total}

    hub.log.clear()
    third = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert third.returncode == ExitCode.OK, third.stderr[-3000:]
    assert hub.fetched() == {}  # all complete: nothing is fetched
    assert "4 already complete, fetching 0" in third.stdout


def test_an_unknown_repository_is_refused_with_the_fix(hub, tmp_path):
    to = tmp_path / "models" / "hub" / "draftgen-test" / "other"
    argv = DownloadArgs(repo="draftgen-test/other", to=str(to)).argv()
    _, env = _command(hub, to)
    result = subprocess.run(
        [sys.executable, "-m", "draftgen.cli", *argv], env=env, capture_output=True, text=True
    )
    assert result.returncode == ExitCode.INVALID, result.stderr[-3000:]
    assert "model.hfTokenSecret" in result.stderr and "draftgen-test/other@main" in result.stderr
