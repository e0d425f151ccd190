"""status.exports comes only from a generator pod that succeeded and left export results in its
termination message; a failed pod's log tail or another message is not mistaken for them."""

from __future__ import annotations

from draftgen.contract.export_cli import ExportResult, results_json
from draftgen.controller import names
from draftgen.controller.observe import export_results


def _pod(exit_code: int, message: str) -> dict:
    terminated = {"exitCode": exit_code, "message": message}
    return {
        "metadata": {"name": f"g-{exit_code}"},
        "status": {
            "containerStatuses": [
                {"name": names.GENERATOR_CONTAINER, "state": {"terminated": terminated}}
            ]
        },
    }


def test_results_come_from_the_succeeded_pod_only() -> None:
    text = results_json([ExportResult("parquet", "/output/e", 12, "/output/e/README.md")])
    failed = _pod(7, "Traceback ...\nspec.exports[0] (parquet to /output/e): exited 1")
    got = export_results([failed, _pod(0, text)])
    assert got is not None and [(e.path, e.rows, e.card) for e in got] == [
        ("/output/e", 12, "/output/e/README.md")
    ]
    assert export_results([failed]) is None
    assert export_results([_pod(0, "")]) is None
    assert export_results([_pod(0, "2026-12-01 INFO done")]) is None
    running = {"metadata": {"name": "g"}, "status": {"phase": "Running"}}
    assert export_results([running]) is None
