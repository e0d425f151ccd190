"""The Dockerfile's structure (tests/image builds and runs it): multi-stage, the final
stage runs as a non-root user with no compilers, everything installs from the lock
(constraints.txt), and one `draftgen` entrypoint serves the operator and the generator."""

from __future__ import annotations

import re
import shlex
import tomllib

import pytest

from .rendering import REPO

COMPILERS = re.compile(r"\b(build-essential|gcc|g\+\+|clang|make|cmake|rustc|cargo|cc)\b")


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with comments dropped and continuation lines joined."""
    out: list[tuple[str, str]] = []
    buf = ""
    for line in text.splitlines():
        if line.strip().startswith("#") or not line.strip():
            continue
        buf += line.rstrip()
        if buf.endswith("\\"):
            buf = buf[:-1] + " "
            continue
        word, _, rest = buf.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


@pytest.fixture(scope="module")
def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for ins in _instructions((REPO / "Dockerfile").read_text()):
        if ins[0] == "FROM":
            result.append([])
        if result:
            result[-1].append(ins)
    return result


def _args(stage, name):
    return [a for i, a in stage if i == name]


def test_multi_stage_on_slim_python(stages):
    text = (REPO / "Dockerfile").read_text()
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim\b", text, re.M)
    assert len(stages) >= 2
    assert all(_args(s, "FROM")[0].startswith("${PYTHON_IMAGE}") for s in stages)
    assert _args(stages[0], "FROM")[0].endswith(" AS builder")


def test_builder_builds_wheels_from_the_lock(stages):
    runs = " ".join(_args(stages[0], "RUN"))
    assert re.search(r"pip wheel .*-c constraints\.txt", runs)


def test_final_stage_installs_only_locked_wheels_offline(stages):
    final = stages[-1]
    runs = " ".join(_args(final, "RUN"))
    install = next(r for r in _args(final, "RUN") if "pip install" in r)
    assert "--no-index" in install and "-c /tmp/constraints.txt" in install
    assert "from=builder" in install
    assert not COMPILERS.search(runs), "the final stage must not install build tools"
    assert "apt-get install" not in runs


def test_final_stage_runs_as_a_non_root_user(stages):
    final = stages[-1]
    users = _args(final, "USER")
    assert users, "no USER in the final stage"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) == 10001
    # USER comes after every RUN, so nothing later runs as root.
    order = [i for i, _ in final]
    assert max(k for k, i in enumerate(order) if i == "RUN") < order.index("USER")


def test_one_draftgen_entrypoint(stages):
    final = stages[-1]
    assert _args(final, "ENTRYPOINT") == ['["draftgen"]']


def test_image_holds_every_package_directory(stages, repo):
    """Every folder the installed package is made of (draftgen, and the top-level folders its
    links point at) is copied into the build: one left out would be missing at run time."""
    copied = {shlex.split(a)[0].rstrip("/") for a in _args(stages[0], "COPY")}
    links = [p for p in (repo / "draftgen").iterdir() if p.is_symlink()]
    roots = {"draftgen"} | {p.resolve().relative_to(repo.resolve()).parts[0] for p in links}
    assert {"generator", "operator"} <= roots
    assert roots <= copied


def test_lock_pins_every_runtime_dependency(repo):
    project = tomllib.loads((repo / "pyproject.toml").read_text())["project"]
    pinned = {
        line.split("==")[0].lower().replace("_", "-")
        for line in (repo / "constraints.txt").read_text().splitlines()
        if "==" in line
    }
    for req in project["dependencies"]:
        name = re.split(r"[<>=!~\[ ;]", req, maxsplit=1)[0].lower().replace("_", "-")
        assert name in pinned, f"{name} is not pinned in constraints.txt"


def test_dockerignore_keeps_the_context_small_and_secret_free(repo):
    ignored = set((repo / ".dockerignore").read_text().split())
    assert {".git", ".cache", "tests", "out"} <= ignored


def test_no_syntax_directive(repo):
    """A `# syntax=` line makes BuildKit pull a frontend image from Docker Hub before anything
    else: builds must work with the engine's built-in frontend, offline, from a local base."""
    head = (repo / "Dockerfile").read_text().lstrip().splitlines()[:5]
    assert not any(re.match(r"#\s*syntax\s*=", line, re.I) for line in head)
