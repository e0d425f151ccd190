"""Shared fixtures: where the repository and its examples are."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import pytest

from draftgen.testing.sglang import SGLangServer, cache_dir

REPO = Path(__file__).resolve().parent.parent

# A test skipped because a part of the set-up is missing (the SGLang env, the models, the
# trainers, tmux...) says how to get it. Under `make test` (DRAFTGEN_TEST_STRICT=1), which runs
# the whole set-up first, such a skip is a failure: a set-up step that silently did nothing must
# not pass CI with its tests unrun.
_MISSING_SETUP = re.compile(r"make \w+|setup_system\.sh|is missing|not built|no Docker engine")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("DRAFTGEN_TEST_STRICT") != "1":
        return
    reason = str(report.longrepr[-1]) if isinstance(report.longrepr, tuple) else ""
    if _MISSING_SETUP.search(reason):
        report.outcome = "failed"
        report.longrepr = f"set-up missing under make test (DRAFTGEN_TEST_STRICT=1): {reason}"


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`make test` runs two workers) the tests marked `image` share one
    worker (`--dist loadgroup`): one Docker engine, one image build and one long-running
    container per run, not one per worker.

    The tests of a module that share a module-scoped fixture of that module (a generator run, a
    server of its own) are a group too: spread over both workers, each worker would build it.

    The tests marked `long` run first (a stable sort, so pytest-randomly's shuffle holds within
    each part): the workers take tests in collection order, and a minute-long test taken last
    leaves the other worker idle for that minute at the end of the run. xdist puts its groups
    first by itself (the largest first)."""
    for item in items:
        if item.get_closest_marker("image"):
            item.add_marker(pytest.mark.xdist_group("image"))
        elif item.get_closest_marker("xdist_group") is None and (module := _fixture_module(item)):
            item.add_marker(pytest.mark.xdist_group(module))
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def _fixture_module(item: pytest.Item) -> str | None:
    """The test's module, if the test uses a module-scoped fixture defined in that module."""
    module = item.nodeid.split("::")[0]
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    own = any(d.scope == "module" and d.baseid == module for ds in defs.values() for d in ds)
    return module if own else None


@pytest.fixture(autouse=True)
def _root_logging_restored():
    """The root logger as the test found it. An in-process CLI (`draftgen generate`'s
    `_setup_logging`, kopf's `configure` under KopfRunner) puts a handler on the root logger that
    writes to the test's captured stderr; left there, a later record from any thread (the
    emulator's access log) meets a closed file ("--- Logging error --- ... ValueError: I/O
    operation on closed file" in the run's output)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def examples(repo: Path) -> Path:
    return repo / "examples"


# ---- a real SGLang server on the CPU, shared by every test of the session -----------------------

CACHE = cache_dir()  # $DRAFTGEN_CACHE honoured: a second clone may share the first's set-up
SGLANG_VENV = CACHE / "venv-sglang"
TINY_KIMI = CACHE / "models" / "tiny-kimi"
# tiny-kimi's weights with a tiktoken tokenizer that loads only as remote code (trust_remote_code).
TINY_KIMI_TIKTOKEN = CACHE / "models" / "tiny-kimi-tiktoken"
# Small enough that admission is genuinely KV-bound: requests queue exactly as on a GPU.
SGLANG_TEST_MAX_TOTAL_TOKENS = 4096


@pytest.fixture(scope="session")
def tiny_kimi() -> Path:
    if not (TINY_KIMI / "tokenizer.json").exists():
        pytest.skip(f"{TINY_KIMI} is missing: run `make models`")
    return TINY_KIMI


@pytest.fixture(scope="session")
def tiny_kimi_tiktoken() -> Path:
    """Same weights and special ids as tiny-kimi, so the tiny-kimi server serves its prompts."""
    if not (TINY_KIMI_TIKTOKEN / "tiktoken.model").exists():
        pytest.skip(f"{TINY_KIMI_TIKTOKEN} is missing: run `make models`")
    return TINY_KIMI_TIKTOKEN


# The shared server starts loading as soon as the run is known to need it, in its own process,
# while the tests before the first that uses it run beside it (its 20 s start-up on one core).
_early_server: SGLangServer | None = None


def pytest_collection_finish(session: pytest.Session) -> None:
    global _early_server
    wanted = any("sglang_server" in getattr(item, "fixturenames", ()) for item in session.items)
    if (
        not wanted
        or session.config.option.collectonly
        or os.environ.get("DRAFTGEN_TEST_SGLANG_URL")
        or not (SGLANG_VENV / "bin" / "python").exists()
        or not (TINY_KIMI / "config.json").exists()
    ):
        return
    _early_server = SGLangServer(TINY_KIMI, max_total_tokens=SGLANG_TEST_MAX_TOTAL_TOKENS)
    _early_server.start(wait=False)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _early_server is not None:  # started for tests that did not run (-x, a deselection)
        _early_server.stop()
    if _dp is not None:  # the last test to use it was interrupted
        _dp.stop()


@pytest.fixture(scope="session")
def sglang_server(tiny_kimi: Path):
    """A tiny-kimi SGLang server (`.url`), started once per session and stopped at its end.
    DRAFTGEN_TEST_SGLANG_URL points the tests at an already running server instead."""
    url = os.environ.get("DRAFTGEN_TEST_SGLANG_URL")
    if url:

        class _External:
            pass

        server = _External()
        server.url = url.rstrip("/")
        yield server
        return
    if not (SGLANG_VENV / "bin" / "python").exists():
        pytest.skip(f"{SGLANG_VENV} is missing: run `make sglang`")
    if _early_server is not None and _early_server.is_running():
        _early_server.wait_healthy()
        try:
            yield _early_server
        finally:
            _early_server.stop()
        return
    with SGLangServer(tiny_kimi, max_total_tokens=SGLANG_TEST_MAX_TOTAL_TOKENS) as server:
        yield server


# A `--dp-size 2` server: two schedulers, a KV pool of DP_POOL tokens each. Its start is the
# slowest of the suite (two model loads), so one serves the tests that need one, which are in one
# xdist group (DP_GROUP): one worker starts it, and runs them one after another. It is stopped
# after the last of them: its dispatcher polls without ever sleeping (SGLang 0.5.23), and left up
# for the session it would spin a core under every later test.
DP_POOL = 1024
DP_GROUP = pytest.mark.xdist_group("dp_server")
_dp: SGLangServer | None = None


@pytest.fixture
def dp_server(tiny_kimi: Path) -> SGLangServer:
    """A tiny-kimi server with two data-parallel ranks (SGLang's default round-robin dispatch),
    started by the first test of a run of tests that use it."""
    global _dp
    if not (SGLANG_VENV / "bin" / "python").exists():
        pytest.skip(f"{SGLANG_VENV} is missing: run `make sglang`")
    if _dp is None or not _dp.is_running():
        _dp = SGLangServer(tiny_kimi, max_total_tokens=DP_POOL, dp_size=2, startup_timeout=900)
        _dp.start()
    return _dp


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    global _dp
    uses = "dp_server" in getattr(nextitem, "fixturenames", ())
    if _dp is not None and not uses:
        _dp.stop()
        _dp = None
