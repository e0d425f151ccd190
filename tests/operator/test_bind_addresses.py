"""The operator's servers listen only where they are told to (a setting each, loopback by
default): read from the kernel's socket table, not from what the code asked for."""

from __future__ import annotations

from pathlib import Path

from draftgen.controller import metrics

from .harness import Cluster, free_port, plain_webhook, running_operator, wait_for


def listening(port: int) -> set[str]:
    """Addresses with a TCP socket listening on `port` (from /proc/net/tcp and tcp6)."""
    out = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                out.add("any" if set(address) == {"0"} else address[:width])
    return out


LOOPBACK = "0100007F"  # 127.0.0.1 as /proc/net/tcp writes it


def test_metrics_listen_on_the_configured_address(monkeypatch) -> None:
    monkeypatch.setattr(metrics, "_server_started", False)
    port = free_port()
    server = metrics.serve(port, "127.0.0.1")
    assert server is not None
    try:
        assert listening(port) == {LOOPBACK}
    finally:
        server.shutdown()
        server.server_close()


def test_webhook_listens_on_the_configured_address(cluster: Cluster, monkeypatch) -> None:
    port = plain_webhook(monkeypatch)  # webhook_address left at its default
    with running_operator():
        assert wait_for(lambda: listening(port), "the webhook server") == {LOOPBACK}
