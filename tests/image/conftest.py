"""Fixtures for the tests marked `image`: a Docker engine (the running one, else the project's own
daemon, started here and stopped when the session ends), the draftgen image built by
scripts/docker/image.sh (the stand-in base when the engine is ours), and a long-running container
of it, run as the chart runs it, in which the tests `docker exec` their commands: a Docker engine
with the vfs storage driver copies the whole image for every new container, an exec costs nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts" / "docker"
# Debian's client builds with the engine's built-in BuildKit; a newer client without buildx won't.
DOCKER = os.environ.get("DOCKER") or (
    "/usr/bin/docker" if Path("/usr/bin/docker").exists() else shutil.which("docker") or "docker"
)
UID = 10001  # the image's USER and the chart's runAsUser
# Where the container sees the bind mounts.
IN, OUT = "/data/in", "/data/out"


@dataclass
class Engine:
    env: dict[str, str]

    def docker(
        self, *args: str, timeout: float = 600, check: bool = True, input: str | None = None
    ) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [DOCKER, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"docker {' '.join(args)} exited {proc.returncode}:\n"
                f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            )
        return proc


@pytest.fixture(scope="session")
def docker_engine():
    env = {k: v for k, v in os.environ.items() if k != "DRAFTGEN_DOCKER_STARTED"}
    start = subprocess.run(
        ["bash", str(SCRIPTS / "engine.sh"), "start"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if start.returncode != 0:
        pytest.skip(
            f"no Docker engine could be started (scripts/docker/engine.sh start):\n"
            f"{start.stderr[-2000:]}"
        )
    exported = dict(
        line.removeprefix("export ").split("=", 1)
        for line in start.stdout.splitlines()
        if line.startswith("export ")
    )
    env.update(exported)
    try:
        yield Engine(env)
    finally:
        if exported.get("DRAFTGEN_DOCKER_STARTED"):
            subprocess.run(["bash", str(SCRIPTS / "engine.sh"), "stop"], env=env, timeout=120)


@pytest.fixture(scope="session")
def draftgen_image(docker_engine: Engine) -> str:
    """The image's tag, built (or found up to date in the layer cache) by scripts/docker/image.sh."""
    build = subprocess.run(
        ["bash", str(SCRIPTS / "image.sh")],
        env=docker_engine.env,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert build.returncode == 0, f"the image did not build:\n{build.stderr[-6000:]}"
    sys.stderr.write(build.stderr.splitlines()[-1] + "\n")  # "built TAG in N s; SIZE"
    return build.stdout.strip().splitlines()[-1]


@dataclass
class Container:
    engine: Engine
    name: str
    inputs: Path  # the host side of IN (read-only in the container)
    outputs: Path  # the host side of OUT

    def exec(
        self,
        *args: str,
        timeout: float = 600,
        check: bool = True,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess:
        flags = [f for k, v in (env or {}).items() for f in ("-e", f"{k}={v}")]
        return self.engine.docker("exec", *flags, self.name, *args, timeout=timeout, check=check)


@pytest.fixture(scope="session")
def container(docker_engine: Engine, draftgen_image: str, tmp_path_factory) -> Container:
    """The image running as the chart runs it: uid 10001, read-only root, a tmpfs /tmp, no
    capabilities, no privilege escalation; on the host network (so it reaches the test SGLang
    server and the Kubernetes emulator on 127.0.0.1), with a read-only input and an output mount."""
    root = tmp_path_factory.mktemp("container")
    inputs, outputs = root / "in", root / "out"
    inputs.mkdir()
    outputs.mkdir()
    os.chmod(root, 0o755)
    os.chmod(inputs, 0o755)
    if os.geteuid() == 0:
        os.chown(outputs, UID, UID)
    else:  # a CI runner's user: let the container's uid write
        os.chmod(outputs, 0o777)
    name = f"draftgen-test-{uuid.uuid4().hex[:8]}"
    docker_engine.docker(
        "run",
        "-d",
        "--rm",
        "--name",
        name,
        "--network",
        "host",
        "--user",
        f"{UID}:{UID}",
        "--read-only",
        "--tmpfs",
        "/tmp:rw,exec,size=1g",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "-e",
        "HOME=/tmp",
        "-e",
        "HF_HOME=/tmp/huggingface",
        "-e",
        "HF_HUB_OFFLINE=1",
        "-v",
        f"{inputs}:{IN}:ro",
        "-v",
        f"{outputs}:{OUT}",
        "--entrypoint",
        "python",
        draftgen_image,
        "-c",
        "import time; time.sleep(1e9)",
        timeout=900,
    )
    try:
        yield Container(docker_engine, name, inputs, outputs)
    finally:
        docker_engine.docker("rm", "-f", name, check=False, timeout=300)
