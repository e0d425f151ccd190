"""The draftgen image on a real Docker engine: it builds from the project's Dockerfile, carries
what real tokenizers import and nothing to compile with, and runs as the chart runs it."""

from __future__ import annotations

import json
import tomllib

import pytest
import yaml

from .conftest import REPO, UID

# The first test also builds the image (minutes with the vfs storage driver, a cold cache).
pytestmark = [pytest.mark.image, pytest.mark.timeout(1800)]


def _version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_the_image_is_tagged_as_the_chart_pulls_it(draftgen_image, docker_engine):
    chart = yaml.safe_load((REPO / "charts/draftgen/Chart.yaml").read_text())
    values = yaml.safe_load((REPO / "charts/draftgen/values.yaml").read_text())
    assert chart["appVersion"] == _version()
    assert draftgen_image == f"{values['image']['repository']}:{chart['appVersion']}"
    config = json.loads(docker_engine.docker("image", "inspect", draftgen_image).stdout)[0]
    assert config["Config"]["User"] == f"{UID}:{UID}"
    assert config["Config"]["Entrypoint"] == ["draftgen"]


def test_docker_run_prints_the_version(draftgen_image, docker_engine):
    run = docker_engine.docker(
        "run",
        "--rm",
        "--network",
        "host",
        "--read-only",
        "--tmpfs",
        "/tmp",
        draftgen_image,
        "--version",
    )
    assert run.stdout.strip() == f"draftgen {_version()}"


def test_it_runs_as_uid_10001_on_a_read_only_root(container):
    ids = container.exec("python", "-c", "import os; print(os.getuid(), os.getgid())")
    assert ids.stdout.split() == [str(UID), str(UID)]
    assert container.exec("touch", "/home/draftgen/x", check=False).returncode != 0
    assert container.exec("touch", "/tmp/x").returncode == 0


def test_tokenizer_runtime_packages_import(container):
    code = (
        "import tiktoken, sentencepiece, google.protobuf, transformers, tokenizers; "
        "print(tiktoken.__version__, sentencepiece.__version__, google.protobuf.__version__)"
    )
    versions = container.exec("python", "-c", code).stdout.split()
    pins = dict(
        line.split("==")
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if "==" in line
    )
    assert versions == [pins["tiktoken"], pins["sentencepiece"], pins["protobuf"]]


def test_the_image_is_lean(container):
    """No compiler, no test extras in the final stage."""
    tools = container.exec("sh", "-c", "command -v gcc cc g++ make clang ld", check=False)
    assert tools.stdout.strip() == "", tools.stdout
    test_extras = ("pytest", "hypothesis", "kmock", "datasets", "jsonschema")
    code = f"import importlib.util as u; print(*[m for m in {test_extras!r} if u.find_spec(m)])"
    assert container.exec("python", "-c", code).stdout.strip() == ""


def test_operator_help(container):
    out = container.exec("draftgen", "operator", "--help").stdout
    assert "--namespace" in out and "--standalone" in out
