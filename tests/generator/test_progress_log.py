"""Progress in a pod's log: `--log-format json` (one object a line) and `text` (a readable block),
both from the same summary; the operator asks for json."""

from __future__ import annotations

import json
import logging

from draftgen.contract.generator_cli import Flag
from draftgen.generator.telemetry.logs import JsonFormatter
from draftgen.generator.telemetry.progress import (
    Progress,
    ServerFigures,
    server_figures,
    text_block,
)
from draftgen.output.ledger import Ledger
from draftgen.spec import Budget


def _ledgers() -> list[Ledger]:
    code = Ledger("code", Budget(completion_tokens=1_000))
    for completion, reason in ((300, "stop"), (200, "length")):
        code.add(40, completion, reason)
    code.add_reject("prompt_too_long")
    code.add_reject("prompt_too_long")
    code.add_reject("request_failed")
    chat = Ledger("chat", Budget(max_samples=2))
    chat.add(10, 5, "stop")
    chat.add(10, 7, "stop")
    return [code, chat]


SERVERS = [ServerFigures("http://user:secret@s0:30000", 3, 0.955, 40, 6)]


def _records(fmt: str, caplog) -> list[logging.LogRecord]:
    progress = Progress(_ledgers(), live=False, log_format=fmt, servers=lambda: SERVERS)
    progress.add_tokens("code", 500)
    with caplog.at_level(logging.INFO, logger="draftgen.generate"):
        progress.update(250.0, 2.0, 3, force=True)
    return [r for r in caplog.records if r.name == "draftgen.generate"]


def test_json_is_one_object_a_line_with_every_figure(caplog):
    (record,) = _records("json", caplog)
    line = JsonFormatter().format(record)
    assert "\n" not in line
    obj = json.loads(line)
    assert obj["event"] == "progress" and obj["level"] == "INFO"
    assert obj["tokens_per_second"] == 250.0 and obj["eta_seconds"] == 2.0
    assert obj["in_flight"] == 3 and obj["finish_at"].endswith("+00:00")
    code, chat = obj["datasets"]  # spec order
    assert code["dataset"] == "code" and chat["dataset"] == "chat"
    assert (code["samples"], code["completion_tokens"], code["prompt_tokens"]) == (2, 500, 80)
    assert code["budget"] == {"completionTokens": 1000} and code["percent_of_budget"] == 50.0
    assert code["truncation_rate"] == 0.5 and code["rejects"] == 3
    assert code["rejects_by_reason"] == {"prompt_too_long": 2, "request_failed": 1}
    assert chat["done"] and chat["state"].startswith("done") and chat["eta_seconds"] == 0.0
    (server,) = obj["servers"]
    assert server["token_usage"] == 0.955 and server["queued"] == 6 and server["running"] == 40
    assert "secret" not in line  # credentials in a server URL never reach the log


def test_text_is_a_readable_block(caplog):
    (record,) = _records("text", caplog)
    block = record.getMessage()
    lines = block.splitlines()
    assert len(lines) == 4  # header, two datasets, one server
    assert "250 tok/s" in lines[0] and "4 samples" in lines[0] and "ETA 2s" in lines[0]
    assert "samples 2  " in lines[1]
    assert "code" in lines[1] and "completion 500/1,000" in lines[1]
    assert "truncated 50.0%" in lines[1] and "(prompt_too_long 2, request_failed 1)" in lines[1]
    assert "samples 2/2" in lines[2]
    assert "KV 96% used" in lines[3] and "6 queued" in lines[3] and "secret" not in lines[3]
    assert all(len(line) < 200 for line in lines)


def test_text_block_and_json_come_from_the_same_summary():
    progress = Progress(_ledgers(), live=False, servers=lambda: SERVERS)
    summary = progress.summary(10.0, None, 0)
    assert summary["eta_seconds"] is None and summary["finish_at"] is None
    assert "ETA ?" in text_block(summary).splitlines()[0]


def test_server_figures_read_the_fleets_pools_one_per_data_parallel_rank():
    from draftgen.generator.sglang.client import ServerLoad, SGLangClient
    from draftgen.generator.sglang.fleet import Pool, Server

    plain = Server(SGLangClient("http://s0:30000"))
    plain.pools[0].load = ServerLoad(num_running_reqs=4.0, num_queue_reqs=1.0, token_usage=0.5)
    plain.pools[0].in_flight = 2
    ranked = Server(SGLangClient("http://s1:30000"))
    ranked.pools = [Pool(ranked, 0), Pool(ranked, 1)]
    ranked.pools[0].load = ServerLoad(num_running_reqs=9.0, num_queue_reqs=3.0, token_usage=0.99)
    figures = server_figures([*plain.pools, *ranked.pools])
    assert figures == [
        ServerFigures("http://s0:30000", 2, 0.5, 4.0, 1.0),
        ServerFigures("http://s1:30000", 0, 0.99, 9.0, 3.0, dp_rank=0),
        ServerFigures("http://s1:30000", 0, None, None, None, dp_rank=1),
    ]
    summary = Progress([], servers=lambda: figures).summary(0.0, None, 2)
    block = text_block(summary)
    assert "server http://s1:30000 rank 0: KV 99% used, 9 running, 3 queued" in block
    assert "server http://s1:30000 rank 1: KV ?% used" in block
    assert [s.get("dp_rank") for s in summary["servers"]] == [None, 0, 1]


def test_the_operator_asks_for_json_logs():
    from draftgen.controller.render import generator as render_generator
    from draftgen.spec import load_job
    from tests.conftest import REPO

    job = load_job(REPO / "examples" / "kimi-k2.5.yaml")
    args = render_generator.generator_args(
        job.spec, ["http://kimi-server-0:30000"], "kimi", "drafters"
    )
    assert args[args.index(Flag.LOG_FORMAT.value) + 1] == "json"
