"""The operator restarted between every pair of reconcile steps — and killed between two API
writes inside a step — while the API answers 409/500 now and then: a fresh operator process per
step (no memory carried over), each step the same code kopf's handlers run. Deterministic
(seeded), unlike the kopf-level test next door whose restarts fall where the timing puts them."""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass

import pytest

from draftgen.controller.kube import Kube, KubeError
from draftgen.controller.reconcile import JobRef, Reconciler
from draftgen.controller.settings import OperatorSettings
from tests.operator.harness import Cluster

from .flaky_cluster import FlakyEmulatorThread
from .test_operator_faults import _final_state, _job, _settled, _world


class Crash(BaseException):
    """The operator process died (between two API calls)."""


class DyingKube(Kube):
    """The operator's API client, in a process that dies after a write with chance `rate`."""

    def __init__(self, url: str, rng: random.Random, rate: float) -> None:
        super().__init__(url, backoff=0.01)
        self._rng, self._rate = rng, rate

    def _request(self, method, url, **kwargs):
        result = super()._request(method, url, **kwargs)
        if method != "GET" and self._rng.random() < self._rate:
            raise Crash(f"died after {method} {url}")
        return result


def one_step(reconciler: Reconciler, namespace: str, name: str) -> None:
    """What every handler does: read the job fresh, reconcile, write the status."""
    reconciler.reconcile_stored(namespace, name)


def _without_server_ready(state: dict) -> dict:
    return {**state, "conditions": [c for c in state["conditions"] if c[0] != "ServerReady"]}


def _drive(emu, scenario: str, seed: int, crash_rate: float) -> tuple[dict, int, int]:
    cluster = Cluster(emu, "drafters")
    cluster.apply(_job())
    rng = random.Random(seed)
    settings = OperatorSettings(http_timeout_seconds=0.2, preflight=False)
    steps = crashes = 0
    while not _settled(cluster, scenario):
        assert steps < 200, f"no end after {steps} steps: {cluster.status('kimi')}"
        reconciler = Reconciler(DyingKube(emu.url, rng, crash_rate), settings)  # a new process
        try:
            one_step(reconciler, "drafters", "kimi")
        except KubeError:
            pass  # kopf retries the handler
        except Crash:
            crashes += 1
        finally:
            reconciler.kube.close()
        steps += 1
        _world(cluster, scenario)
    return _final_state(cluster), steps, crashes


SCENARIOS = ["succeeds", "generator-fails", "crash-loop"]
# The tests below share one drive of each scenario: under pytest-xdist on one worker.
pytestmark = pytest.mark.xdist_group("reconcile_steps")


@dataclass
class Drive:
    expected: dict  # the end state on a calm API with no crashes
    got: dict  # ... with 409s/500s injected and the operator killed between writes
    crashes: int
    injected: list


def _drive_both(tmp_path, scenario: str) -> Drive:
    (tmp_path / "calm").mkdir()
    (tmp_path / "flaky").mkdir()
    calm = FlakyEmulatorThread(tmp_path / "calm", fail_rate=0.0, seed=0).start()
    try:
        expected, _, _ = _drive(calm, scenario, seed=0, crash_rate=0.0)
    finally:
        calm.stop()
    # Seed 4: across the three scenarios it injects 409s, 500s and lost answers (asserted below).
    flaky = FlakyEmulatorThread(tmp_path / "flaky", fail_rate=0.3, seed=4).start()
    try:
        got, _, crashes = _drive(flaky, scenario, seed=5, crash_rate=0.3)
        injected = flaky.injected()
    finally:
        flaky.stop()
    return Drive(expected, got, crashes, injected)


@pytest.fixture(scope="module")
def drive(tmp_path_factory):
    """Each scenario driven once per module, whichever test asks first (any order)."""
    done: dict[str, Drive] = {}

    def run(scenario: str) -> Drive:
        if scenario not in done:
            done[scenario] = _drive_both(tmp_path_factory.mktemp(scenario), scenario)
        return done[scenario]

    return run


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fresh_operator_per_step_with_crashes_and_api_errors(drive, scenario):
    d = drive(scenario)
    # ServerReady is the server as last observed; after the teardown nobody observes it again,
    # so where the restarts fell decides which observation it keeps. Everything else must agree.
    assert _without_server_ready(d.got) == _without_server_ready(d.expected)
    for plural, names in d.got["created"].items():
        assert len(names) == len(set(names)), f"{plural} created twice: {names}"
    # The disturbance was real (the seeds are fixed, so this does not flicker).
    assert d.crashes + len(d.injected) >= 3, (d.crashes, d.injected)


def test_the_scenarios_met_every_kind_of_api_error(drive):
    """Across the three scenarios (fixed seeds): 409s, 500s, and 500s after an applied write."""
    injected = [i for scenario in SCENARIOS for i in drive(scenario).injected]
    assert {s for s, _, _ in injected} == {409, 500}
    assert any(when == "after" for _, when, _ in injected), injected


@contextlib.contextmanager
def _generating(tmp_path):
    """The job brought up to its generator Job (the server ready) on an emulator that does not
    fail, by one reconciler: (emulator, cluster, settings, reconciler)."""
    (tmp_path / "e").mkdir()
    emu = FlakyEmulatorThread(tmp_path / "e", fail_rate=0.0, seed=0).start()
    try:
        cluster = Cluster(emu, "drafters")
        cluster.apply(_job())
        settings = OperatorSettings(http_timeout_seconds=0.2, preflight=False)
        rec = Reconciler(Kube(emu.url, backoff=0.01), settings)
        for _ in range(3):  # up to Generating with a generator Job
            one_step(rec, "drafters", "kimi")
            if cluster.deployment("kimi-server-0") is not None:
                cluster.server_ready("kimi")
        yield emu, cluster, settings, rec
    finally:
        emu.stop()


def test_a_lost_status_write_after_teardown_does_not_bring_the_server_back(tmp_path):
    """Regression: the generator succeeded, the server was torn down, and the operator died
    before writing `Succeeded`. The next operator must not re-create the GPU server."""
    with _generating(tmp_path) as (emu, cluster, settings, rec):
        assert cluster.status("kimi")["phase"] == "Generating"
        cluster.finish_generator("kimi")
        # The teardown happened, the status write did not (the process died in between).
        rec.reconcile(JobRef(body=cluster.job("kimi")))
        assert cluster.deployment("kimi-server-0") is None
        assert cluster.status("kimi")["phase"] == "Generating"

        one_step(Reconciler(Kube(emu.url, backoff=0.01), settings), "drafters", "kimi")
        assert cluster.status("kimi")["phase"] == "Succeeded"
        assert cluster.deployment("kimi-server-0") is None
        assert emu.creates("deployments") == ["kimi-server-0"]


def test_a_lost_status_write_after_a_generator_failure_does_not_restart_it(tmp_path):
    """Regression: the generator Job failed past its backoff limit; the operator recorded
    nothing before it died. The next operator must report the failure, not start a new Job
    (and the failed Job stays, with its pods' logs)."""
    with _generating(tmp_path) as (emu, cluster, settings, rec):
        cluster.finish_generator("kimi", succeeded=False)
        rec.reconcile(JobRef(body=cluster.job("kimi")))  # acted; the status write is lost
        for _ in range(3):
            one_step(Reconciler(Kube(emu.url, backoff=0.01), settings), "drafters", "kimi")
        status = cluster.status("kimi")
        assert status["phase"] == "Failed"
        assert "GeneratorFailed" in {c["reason"] for c in status["conditions"]}
        assert emu.creates("jobs") == ["kimi-generator"]
        assert cluster.batch_job("kimi-generator") is not None
