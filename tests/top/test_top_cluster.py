"""`draftgen top gj/NAME -n NS` in a real terminal (tmux) against a GenerationJob on the Kubernetes
emulator, kopf running the real operator: the spec's order and budgets, the phase, the generator's
own metrics page (its real metrics class) through the API server's pod proxy; when that page is
gone, the status the operator wrote, said so; a server replica that does not answer is NO DATA."""

from __future__ import annotations

import os

import pytest
from prometheus_client import start_http_server

from draftgen.generator.telemetry.metrics import GeneratorMetrics
from draftgen.output.ledger import Ledger
from draftgen.spec import Budget
from tests.operator.harness import Cluster, example_job, free_port, wait_for

from .tmux import TOP, Tmux, dataset_rows


@pytest.fixture
def tmux():
    t = Tmux(120, 40)
    yield t
    t.close()


def _generator_metrics() -> GeneratorMetrics:
    m = GeneratorMetrics()
    chat = Ledger("b-chat", Budget(completion_tokens=10_000_000))
    for _ in range(3):
        chat.add(4_000, 900_000, "stop")
    chat.add(4_000, 100_000, "length")
    chat.add_reject("prompt_too_long")
    coding = Ledger("b-coding", Budget(completion_tokens=10_000_000))
    coding.add(4_500, 10_400_000, "stop")
    for led in (chat, coding):
        m.start_from(led)
    m.completion_tokens_per_second.set(930.0)
    m.eta.set(62_400)
    return m


def test_top_on_a_generationjob_reads_through_the_pod_proxy(cluster: Cluster, operator, tmux):
    port = free_port()
    job = example_job(cluster.ns, datasets=example_job(cluster.ns)["spec"]["datasets"][:2])
    job["spec"]["generator"]["metricsPort"] = port
    job["spec"]["server"]["port"] = free_port()  # nothing answers there: NO DATA for the replica
    cluster.apply(job)
    wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
    cluster.server_ready("kimi")
    cluster.wait_phase("kimi", "Generating")
    m = _generator_metrics()
    server, _ = start_http_server(port, addr="127.0.0.1", registry=m.registry)
    try:
        cluster.generator_running("kimi")
        wait_for(lambda: cluster.status("kimi").get("datasets"), "the operator's progress read")
        env = {"KUBECONFIG": os.environ["KUBECONFIG"]}
        tmux.start("gj", [*TOP, "gj/kimi", "-n", cluster.ns, "--interval", "0.5"], env)
        screen = tmux.wait_screen("gj", "b-coding")
        assert "gj/kimi -n drafters" in screen and "Generating" in screen
        rows = dataset_rows(screen, ["b-chat", "b-coding"])
        # the generator's page, in spec order, with what only the page has (truncation)
        assert [line.split()[0] for line in screen.splitlines() if line.startswith(" b-")] == [
            "b-chat",
            "b-coding",
        ]
        assert rows["b-chat"]["completion"] == "2.80M/10.00M"
        assert rows["b-chat"]["prompt"] == "16,000" and rows["b-chat"]["samples"] == "4"
        assert rows["b-chat"]["trunc"] == "25.0%" and rows["b-chat"]["rejects"] == "1"
        assert rows["b-coding"]["completion"] == "10.40M/10.00M"
        assert rows["b-coding"]["%"] == "100%" and " done " in screen
        assert "930 tok/s" in screen and "ETA 17h20m" in screen
        assert "NO DATA from server replica 0 (kimi-server-0-abc12)" in screen
    finally:
        server.shutdown()
    # the generator's page is gone: the status the operator wrote, and the screen says so
    screen = tmux.wait_screen("gj", "counts from the GenerationJob's status")
    rows = dataset_rows(screen, ["b-chat", "b-coding"])
    assert rows["b-chat"]["completion"] == "2.80M/10.00M" and rows["b-chat"]["trunc"] == "-"
    assert "generator metrics via the pod proxy" in screen
    tmux.keys("gj", "q")
    assert tmux.exit_status("gj") == 0
