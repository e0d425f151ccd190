"""Class 6 of issue 21: a password in a `--server` URL reaches no log line and no output file
(records' `meta.server`, rejects, manifests), while the run still connects with it."""

from __future__ import annotations

import pytest

from draftgen.redact import redact_text, redact_url

from .gen_run import Run, generate_args, prompt_rows, records, write_job, write_jsonl

SECRET = "s3cretPW0rd"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"http://alice:{SECRET}@10.0.0.1:30000", "http://***@10.0.0.1:30000"),
        (f"https://{SECRET}@host/v1", "https://***@host/v1"),
        (f"http://host:1/?api_key={SECRET}&x=1", "http://host:1/?api_key=***&x=1"),
        ("http://host:30000", "http://host:30000"),
        (f"http://[::1:{SECRET}@x", "http://***@x"),  # unparseable: still masked
    ],
)
def test_redact_url(url, shown):
    assert redact_url(url) == shown
    assert SECRET not in redact_text(f"GET {url} failed: refused")


@pytest.mark.sglang
def test_a_password_in_the_server_url_is_nowhere_in_logs_or_outputs(
    tmp_path, tiny_kimi, sglang_server
):
    write_jsonl(tmp_path / "p.jsonl", [*prompt_rows(3), {"nope": 1}])
    job = write_job(
        tmp_path, tiny_kimi, [{"name": "chat", "source": "p.jsonl", "format": "prompt"}]
    )
    url = sglang_server.url.replace("://", f"://alice:{SECRET}@", 1)
    out = tmp_path / "out"
    code, log = Run(generate_args(job, url, out), tmp_path).finish()
    assert code == 0, log
    assert "***@" in log  # the server is still named, without its password
    assert SECRET not in log
    recs = records(out / "chat")
    assert len(recs) == 3
    assert all(r["meta"]["server"].startswith("http://***@") for r in recs)
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
