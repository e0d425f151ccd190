"""A benchmark harness, not a test fake: an HTTP server that answers SGLang's `/generate`
instantly with a canned generation of realistic size, so the only cost measured is the
generator's own. It speaks just enough of SGLang's API for `draftgen generate` to run against
it (`/health_generate`, `/get_server_info`, `/metrics`, `/generate`, `/abort_request`); it has no
`/tokenize`, so the generator skips its tokenizer comparison (and says so in its log).

    .cache/venv/bin/python bench/canned_server.py --port 31555 --output-tokens 1000

Plain asyncio, HTTP/1.1 keep-alive, no framework: it must cost far less than the client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random


def canned_generation(output_tokens: int, seed: int = 0) -> bytes:
    """A `/generate` answer body: ids spread over Kimi's vocabulary (up to 163,839), a text of
    about four characters per token, and the meta_info SGLang sends."""
    rng = random.Random(seed)
    ids = [rng.randrange(1000, 163_839) for _ in range(output_tokens - 1)] + [163_586]
    text = "".join(rng.choice("abcdefghij klmnop\nqrstuvwxyz") for _ in range(4 * output_tokens))
    body = {
        "text": text,
        "output_ids": ids,
        "meta_info": {
            "id": "canned",
            "finish_reason": {"type": "stop", "matched": 163_586},
            "prompt_tokens": 1000,
            "completion_tokens": output_tokens,
            "cached_tokens": 0,
            "reasoning_tokens": 0,
            "num_retractions": 0,
            "e2e_latency": 0.001,
            "queue_time": 0.0,
            "first_token_latency": 0.001,
            "decode_throughput": 1e6,
        },
    }
    return json.dumps(body).encode()


SERVER_INFO = json.dumps(
    {
        "max_total_num_tokens": 100_000_000,
        "max_running_requests": 100_000,
        "max_req_input_len": 1_000_000,
        "context_length": 1_000_000,
        "version": "canned",
        "internal_states": [{"effective_max_running_requests_per_dp": 100_000}],
    }
).encode()
METRICS = (
    b"sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\nsglang:token_usage 0.0\n"
    b"sglang:gen_throughput 0\n"
)


def _response(status: str, body: bytes, ctype: bytes = b"application/json") -> bytes:
    return (
        b"HTTP/1.1 "
        + status.encode()
        + b"\r\nContent-Type: "
        + ctype
        + b"\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


class Handler:
    def __init__(self, output_tokens: int) -> None:
        self.generate = _response("200 OK", canned_generation(output_tokens))
        self.routes = {
            (b"GET", b"/health_generate"): _response("200 OK", b"", b"text/plain"),
            (b"GET", b"/health"): _response("200 OK", b"", b"text/plain"),
            (b"GET", b"/get_server_info"): _response("200 OK", SERVER_INFO),
            (b"GET", b"/server_info"): _response("200 OK", SERVER_INFO),
            (b"GET", b"/metrics"): _response("200 OK", METRICS, b"text/plain"),
            (b"POST", b"/abort_request"): _response("200 OK", b"{}"),
        }
        self.not_found = _response("404 Not Found", b'{"detail":"Not Found"}')
        self.requests = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                first, _, rest = head.partition(b"\r\n")
                method, path, _ = first.split(b" ", 2)
                length = 0
                for line in rest.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if length:
                    await reader.readexactly(length)
                if method == b"POST" and path == b"/generate":
                    self.requests += 1
                    writer.write(self.generate)
                else:
                    writer.write(self.routes.get((method, path.split(b"?")[0]), self.not_found))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def main(port: int, output_tokens: int) -> None:
    handler = Handler(output_tokens)
    server = await asyncio.start_server(handler.serve, "127.0.0.1", port, backlog=4096)
    print(f"canned SGLang on 127.0.0.1:{port}, {output_tokens} tokens per generation", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--output-tokens", type=int, default=1000)
    args = parser.parse_args()
    try:
        asyncio.run(main(args.port, args.output_tokens))
    except KeyboardInterrupt:
        pass
