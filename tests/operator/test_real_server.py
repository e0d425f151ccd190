"""The server's KV capacity in `status`, read by the operator from a real SGLang server's
`/get_server_info` (the tiny-kimi server on the CPU, shared by the session)."""

from __future__ import annotations

from urllib.parse import urlsplit as URL

import httpx
import pytest

from draftgen.controller.readings import server_kv_capacity

from .harness import Cluster, example_job, wait_for

pytestmark = pytest.mark.sglang


def test_kv_capacity_is_what_sglang_reports(sglang_server) -> None:
    url = URL(sglang_server.url)
    info = httpx.get(f"{sglang_server.url}/get_server_info", timeout=30).json()
    assert server_kv_capacity(url.hostname, url.port, timeout=30) == info["max_total_num_tokens"]
    assert server_kv_capacity(url.hostname, 1, timeout=5) is None  # nothing listens: unknown


def test_status_shows_the_servers_kv_pool(sglang_server, cluster: Cluster, operator) -> None:
    url = URL(sglang_server.url)
    expected = httpx.get(f"{sglang_server.url}/get_server_info", timeout=30).json()[
        "max_total_num_tokens"
    ]
    job = example_job(cluster.ns)
    job["spec"]["server"]["port"] = url.port
    cluster.apply(job)
    wait_for(lambda: cluster.deployment("kimi-server-0"), "the server Deployment")
    # The server pod's address is the real server's.
    cluster.server_ready("kimi", pod_ip=url.hostname)
    status = wait_for(
        lambda: (s := cluster.status("kimi")).get("server", {}).get("maxTotalNumTokens") and s,
        "the KV capacity in status",
        timeout=60,
    )
    assert status["server"]["maxTotalNumTokens"] == expected
    # The planner's figures follow from the observed pool once the generator runs.
    status = wait_for(
        lambda: (s := cluster.status("kimi")).get("plan") and s,
        "status.plan from the observed KV pool",
        timeout=60,
    )
    assert status["plan"]["kvCapacityTokens"] == expected
