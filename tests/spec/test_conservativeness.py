"""`server.scheduleConservativeness` unset: the server keeps back little KV when draftgen's own
admission guards the pool (auto concurrency), more when the server's reservation is the only
guard (fixed); a value the user sets is what the server gets."""

from __future__ import annotations

import pytest

from draftgen.contract.sglang_flags import SGLangFlag as F
from draftgen.contract.sglang_flags import value_in
from draftgen.launch.server_argv import server_args
from draftgen.spec import parse_job


def _job(concurrency: dict, server: dict | None = None):
    return parse_job(
        {
            "apiVersion": "draftgen.io/v1alpha1",
            "kind": "GenerationJob",
            "metadata": {"name": "c"},
            "spec": {
                "model": {"weights": "/models/m"},
                "server": server or {},
                "generator": {"concurrency": concurrency},
                "datasets": [{"name": "d", "source": "d.jsonl", "format": "prompt"}],
            },
        }
    )


@pytest.mark.parametrize(
    ("concurrency", "server", "rendered"),
    [
        ({"mode": "auto"}, None, "0.1"),
        ({"mode": "fixed", "maxRequests": 150}, None, "0.5"),
        ({"mode": "auto"}, {"scheduleConservativeness": 1.0}, "1.0"),
        ({"mode": "fixed", "maxRequests": 150}, {"scheduleConservativeness": 0.3}, "0.3"),
    ],
)
def test_the_server_gets_the_default_for_the_concurrency_mode(concurrency, server, rendered):
    job = _job(concurrency, server)
    assert value_in(server_args(job.spec), F.SCHEDULE_CONSERVATIVENESS) == rendered
    assert job.spec.schedule_conservativeness == float(rendered)
