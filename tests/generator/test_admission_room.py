"""Admission by the server's own rule (issue 17): what a KV-bound SGLang server has free for the
next request, which ready sample goes next, and a queue that stays short without holding back
a request the server would start at once. Plain numbers, no server."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from draftgen.generator.scheduling.room import (
    CLIP_MAX_NEW,
    INIT_NEW_TOKEN_RATIO,
    PASS_LIMIT,
    ServerView,
    admission_room,
    fits_any_room,
    fits_room,
    send_order,
    server_admits,
    server_charge,
)

KW = dict(mode="auto", max_requests=None, tokens_factor=10.0)


def _view(held, prompts, max_new, *, running, queue, usage, ratio=0.1, kv=8192):
    n = len(held)
    return ServerView(
        kv_tokens=kv,
        max_running=None,
        in_flight=n,
        in_flight_tokens=float(sum(held)),
        queue=queue,
        running=running,
        token_usage=usage,
        new_token_ratio=ratio,
        held=np.array(held, dtype=float),
        prompts=np.array(prompts, dtype=float),
        max_new=np.array(max_new, dtype=float),
    )


def test_room_is_the_free_pool_less_the_servers_reservations_and_the_queue_ahead():
    # Three requests sent, oldest first; the server runs two of them (a 1,300-token prompt
    # with 56 made, a 160-token one with 6 made) and the third (160 tokens) waits.
    v = _view([1356, 166, 160], [1300, 160, 160], [256, 256, 256], running=2, queue=1, usage=0.5)
    free = 8192 * 0.5
    reserved = 0.1 * ((256 - 56) + (256 - 6))
    waiting = server_charge(160, 256)
    assert admission_room(v) == free - reserved - waiting
    assert server_charge(160, 256) == 160 + 256 + 1
    # SGLang clips each maxNewTokens at 4,096 in its estimate.
    assert server_charge(100, 16_384) == 100 + CLIP_MAX_NEW + 1
    # Without a reported ratio the server's start value is assumed (the most it reserves).
    assert admission_room(replace(v, new_token_ratio=None)) < admission_room(v)
    assert INIT_NEW_TOKEN_RATIO == 0.7
    # No live reading: unknown.
    assert admission_room(replace(v, token_usage=None)) is None
    assert fits_room(replace(v, running=None), 10, 10) is None


def test_a_short_prompt_fits_where_a_long_one_would_wait():
    # 7,000 of 8,192 in use: room about 1,100 — a 160-token prompt (+256) fits, 1,300 does not.
    v = _view([1400] * 5, [1300] * 5, [256] * 5, running=5, queue=0, usage=7000 / 8192)
    assert fits_room(v, 160, 256)
    assert not fits_room(v, 1300, 256)
    sick = replace(v, healthy=False)
    assert fits_any_room([sick, v], 160, 256) is True
    assert fits_any_room([v, v], 1300, 256) is False
    assert fits_any_room([replace(v, token_usage=None)], 160, 256) is None


def test_a_request_the_server_starts_at_once_is_sent_past_a_full_queue_target():
    # The last reading showed a queue (stale: the server has since admitted it), but the pool
    # still has room for this request beside everything sent: it would not wait. The old rule
    # held it back for the queue alone.
    v = _view([300, 300, 300], [160, 160, 160], [256] * 3, running=1, queue=2, usage=0.3)
    assert server_admits(v, 200, prompt=160, max_new=256, **KW)
    # One that would wait is held back while the queue is at its target.
    crowded = replace(v, token_usage=0.9)
    assert not server_admits(crowded, 200, prompt=160, max_new=256, **KW)


def test_what_ended_since_the_reading_is_free_again():
    # A 1,300-token request ended after the last reading: its tokens are free now (the server
    # will show it at its next reading), and it no longer runs.
    v = _view([166, 1356], [160, 1300], [256, 256], running=3, queue=0, usage=7400 / 8192)
    assert not fits_room(v, 1300, 256)
    ended = replace(v, freed=1400.0, landed=1)
    assert fits_room(ended, 1300, 256)
    # The two left are the running ones: none of ours is counted as waiting.
    assert admission_room(ended) == 8192 - 7400 + 1400 - 0.1 * ((256 - 6) + (256 - 56))


def test_samples_that_fit_go_first_and_none_waits_forever():
    charge = [1557.0, 417.0]
    # Dataset 0 (long prompts) has fewer requests in flight: the old rule sent it first, and on
    # a FCFS server it would hold back dataset 1's sample behind it.
    assert send_order([2, 5], [False, True], [0, 0], charge) == [1, 0]
    # Both fit, or nothing is known: fewest in flight first, as before.
    assert send_order([2, 5], [True, True], [0, 0], charge) == [0, 1]
    assert send_order([2, 5], [None, None], [0, 0], charge) == [0, 1]
    # Neither fits: the one the server will start soonest waits at the head of its queue.
    assert send_order([2, 5], [False, False], [0, 0], charge) == [1, 0]
    # Passed over PASS_LIMIT times: its turn, whatever it costs.
    assert send_order([2, 5], [False, True], [PASS_LIMIT, 0], charge) == [0, 1]
    assert send_order([2, 5], [False, True], [PASS_LIMIT - 1, 0], charge) == [1, 0]
