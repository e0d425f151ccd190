"""One real `draftgen generate` run over a file of every kind of broken row, against the real
server, watched from inside: each bad row is a line in `rejects.jsonl` with its reason, the good
rows become samples, the job exits 0; every network connection it (or any process it starts)
opens goes to the server it was given; a Hugging Face token in its environment appears in no
output file and no log line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .gen_run import Run, check_consistent, generate_args, rejects, write_job

pytestmark = pytest.mark.sglang

TOKEN = "hf_CANARYtokenDoNotLeak0123456789"

# A `sitecustomize` on PYTHONPATH runs in every Python process the generator starts (the
# tokenizer pool is spawned, so its workers import it too): an audit hook logs each connect.
SITECUSTOMIZE = """
import os, sys
_log = os.environ.get("DRAFTGEN_CONNECT_LOG")
if _log:
    def _hook(event, args):
        if event == "socket.connect":
            address = args[1]
            if isinstance(address, tuple):
                with open(_log, "a") as f:
                    f.write(f"{os.getpid()} {address[0]} {address[1]}\\n")
    sys.addaudithook(_hook)
"""

W = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
ROWS: list[tuple[bytes, str | None]] = [
    (b'{"messages": [{"role": "user", "content": "What is TCP?"}]}', None),
    (
        b'{"messages": [{"role": "user", "content": "Hi"}], "tools": ['
        + json.dumps(W).encode()
        + b"]}",
        None,
    ),
    (b'{"messages": [{"role": "user", "content": "caf\xc3\xa9 \xff\xfe broken"}]}', "invalid_utf8"),
    (b'{"messages": [{"role": "user", "content": "unterminated', "malformed_json"),
    (b'["a", "list", "not", "an", "object"]', "wrong_type"),
    (b'"just a string"', "wrong_type"),
    (b'{"messages": "not a list"}', "wrong_type"),  # a string that is not a JSON list
    (b'{"messages": 42}', "wrong_type"),
    (b'{"conversation": []}', "missing_field"),
    (b'{"messages": []}', "empty_conversation"),
    (
        b'{"messages": [{"role": "system", "content": "only a system prompt"}]}',
        "empty_conversation",
    ),
    (b'{"messages": [{"role": "wizard", "content": "abracadabra"}]}', "unknown_role"),
    (b'{"messages": [{"content": "no role"}]}', "missing_field"),
    (b'{"messages": [{"role": "user", "content": {"nested": "object"}}]}', "wrong_type"),
    (b'{"messages": [{"role": "user", "content": null}]}', "wrong_type"),
    (
        b'{"messages": [{"role": "user", "content": [{"type": "image_url", "url": "x"}]}]}',
        "wrong_type",
    ),
    (b'{"messages": [{"role": "user", "content": "Hi"}], "tools": "{not json"}', "bad_tools"),
    (
        b'{"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function", "function": {"description": "no name"}}]}',
        "bad_tools",
    ),
    (
        b'{"messages": [{"role": "user", "content": "Hi"}], "tools": [{"name": "f", "parameters": "not a schema"}]}',
        "bad_tools",
    ),
    (
        b'{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": "{broken"}}]}, {"role": "user", "content": "?"}]}',
        "bad_tool_call",
    ),
    (
        b'{"messages": [{"role": "user", "content": "' + b"lorem ipsum " * 3000 + b'"}]}',
        "prompt_too_long",
    ),
    (
        b'{"messages": ['
        + b",".join([b'{"role": "user", "content": "again and again"}'] * 800)
        + b"]}",
        "prompt_too_long",
    ),
    (b"[" * 100_000 + b"]" * 100_000, "malformed_json"),
    (b'{"id": "dup", "messages": [{"role": "user", "content": "first"}]}', None),
    (
        b'{"id": "dup", "messages": [{"role": "user", "content": "second, same id"}]}',
        "duplicate_id",
    ),
    (b'{"messages": [{"role": "user", "content": "\\ud800 a lone surrogate"}]}', "template_error"),
]


def test_every_bad_row_is_a_reject_and_the_generator_talks_only_to_its_server(
    tmp_path, tiny_kimi, sglang_server
):
    (tmp_path / "rows.jsonl").write_bytes(b"".join(line + b"\n" for line, _ in ROWS))
    job = write_job(
        tmp_path,
        tiny_kimi,
        [{"name": "rows", "source": "rows.jsonl", "format": "messages"}],
        sampling={"maxNewTokens": 4},
    )
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
    connects = tmp_path / "connects.log"
    out = tmp_path / "out"
    env = {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")])),
        "DRAFTGEN_CONNECT_LOG": str(connects),
        "HF_TOKEN": TOKEN,
    }
    env.pop("HF_HUB_OFFLINE", None)  # nothing may reach for the Hub even when it is allowed
    code, log = Run(generate_args(job, sglang_server.url, out), tmp_path, env=env).finish()
    assert code == 0, log[-3000:]

    got = {r["source_index"]: r for r in rejects(out / "rows")}
    want = {i: reason for i, (_, reason) in enumerate(ROWS) if reason}
    assert {i: r["reason"] for i, r in got.items()} == want
    assert all(r["detail"] for r in got.values())
    samples = check_consistent(out, ["rows"])["rows"]
    assert sorted(r["source_index"] for r in samples) == [
        i for i, (_, reason) in enumerate(ROWS) if reason is None
    ]

    host, port = sglang_server.url.removeprefix("http://").rsplit(":", 1)
    seen = {tuple(line.split()[1:]) for line in connects.read_text().splitlines()}
    assert seen == {(host, port)}, f"connections beyond {sglang_server.url}: {seen}"

    for path in [*out.rglob("*"), Path(tmp_path / "hooks")]:
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    assert TOKEN not in log
