"""Admission rules with plain numbers: budgets predicted from observed lengths, server capacity,
least-loaded choice."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import numpy as np
import pytest

from draftgen.generator.scheduling.admission import (
    MIN_OBSERVATIONS,
    LengthModel,
    budget_admits,
    samples_admit,
)
from draftgen.generator.scheduling.room import (
    HORIZON,
    PEAK_SHARE,
    ServerView,
    calibrated_progress,
    expected_peak,
    kv_moments,
    pick_server,
    server_admits,
)


def _model(lengths, max_new=1000):
    return LengthModel(max_new, list(lengths))


def test_prior_reserves_max_new_tokens_until_the_dataset_has_data():
    m = _model([], max_new=500)
    assert m.predict() == 500
    # 10,000-token budget, worst case 500 each: exactly 20 fit, the 21st does not.
    assert budget_admits(
        budget=10_000, done=0, in_flight=[0] * 19, in_flight_known=0, new_known=0, model=m
    )
    assert not budget_admits(
        budget=10_000, done=0, in_flight=[0] * 20, in_flight_known=0, new_known=0, model=m
    )


def test_observed_lengths_replace_the_prior():
    assert _model([], max_new=5000).predict() == 5000
    m = _model([100] * MIN_OBSERVATIONS, max_new=5000)
    assert m.informed and m.predict() == m.mean() < 1000
    assert m.mean() > 500  # a handful of samples: the prior's long tail still weighs
    m = _model([100] * 100, max_new=200)
    assert 100 < m.mean() < 102  # a hundred: the data decides
    assert budget_admits(
        budget=10_000, done=0, in_flight=[0] * 80, in_flight_known=0, new_known=0, model=m
    )
    assert not budget_admits(
        budget=10_000, done=0, in_flight=[0] * 100, in_flight_known=0, new_known=0, model=m
    )
    # What a request adds to a server's load is its expected length, not a tail quantile: a
    # tenth of generations 10× longer doubles the mean, and that is what many of them sum to.
    m = _model([50] * 90 + [500] * 10, max_new=1000)
    assert 90 < m.predict() < 110


def test_spread_makes_admission_more_careful():
    steady = _model([200] * 100, max_new=400)
    spread = _model([50, 350] * 50, max_new=400)  # same mean, large spread
    n = 45  # 46 × 200 = 9,200 of a 10,000 budget
    assert budget_admits(
        budget=10_000, done=0, in_flight=[0] * n, in_flight_known=0, new_known=0, model=steady
    )
    assert not budget_admits(
        budget=10_000, done=0, in_flight=[0] * n, in_flight_known=0, new_known=0, model=spread
    )


def test_last_sample_is_admitted_only_when_more_likely_to_fit_than_not():
    m = _model(range(100, 200))  # lengths 100..199, median ~150
    assert budget_admits(
        budget=1000, done=840, in_flight=[], in_flight_known=0, new_known=0, model=m
    )
    assert not budget_admits(
        budget=1000, done=870, in_flight=[], in_flight_known=0, new_known=0, model=m
    )
    # A met budget admits nothing.
    assert not budget_admits(
        budget=1000, done=1000, in_flight=[], in_flight_known=0, new_known=0, model=m
    )


def test_without_data_a_small_budget_still_gets_a_first_request():
    m = _model([], max_new=4096)
    assert budget_admits(budget=100, done=0, in_flight=[], in_flight_known=0, new_known=0, model=m)
    assert not budget_admits(
        budget=100, done=0, in_flight=[0], in_flight_known=0, new_known=0, model=m
    )


def test_total_budget_counts_known_prompt_tokens():
    m = _model([100] * 20, max_new=100)
    assert budget_admits(
        budget=1000, done=0, in_flight=[0], in_flight_known=300, new_known=300, model=m
    )
    assert not budget_admits(
        budget=1000, done=0, in_flight=[0], in_flight_known=300, new_known=501, model=m
    )


def test_no_budget_admits_everything_and_samples_are_exact():
    assert budget_admits(
        budget=None,
        done=10**9,
        in_flight=[0] * 1000,
        in_flight_known=0,
        new_known=0,
        model=_model([]),
    )
    assert samples_admit(max_samples=10, done=7, in_flight=2)
    assert not samples_admit(max_samples=10, done=7, in_flight=3)
    assert samples_admit(max_samples=None, done=7, in_flight=3)


def _simulate(budget, max_new, in_flight, draw, speed=20.0, seed=1):
    """A dataset driven by the rule with up to `in_flight` requests at once, `finish` mode
    (what is in flight when the budget is met still lands): the completion tokens written.
    Each request decodes at `speed` tokens/s; admission sees each one's progress."""
    rng = random.Random(seed)
    model = LengthModel(max_new)
    done, flights, t = 0, [], 0.0
    while True:
        while (
            len(flights) < in_flight
            and done < budget
            and budget_admits(
                budget=budget,
                done=done,
                in_flight=[(t - start) * speed for _, start, _ in flights],
                in_flight_known=0,
                new_known=0,
                model=model,
            )
        ):
            length = min(max_new, max(1, int(draw(rng))))
            flights.append((t + length / speed, t, length))
        if not flights:
            return done
        flights.sort()
        t, _, length = flights.pop(0)
        done += length
        model.observe(length)


def test_simulated_budget_overshoot_stays_small_at_high_concurrency():
    budget = 500_000
    done = _simulate(budget, 4096, 64, lambda rng: rng.lognormvariate(6.5, 0.6))
    assert budget * 0.99 <= done <= budget * 1.01, done


def test_heavy_tail_with_a_quarter_of_the_dataset_in_flight_lands_within_one_percent():
    """256 requests in flight of ~1,000 samples, lognormal lengths (mean ~1,000, sigma 1.2,
    capped at 8,192). The finished generations are the short ones — the long ones are still
    running — so a model that learns only from finished ones predicts the in-flight total ~16 %
    short and overshoots by 4-10 %; counting the running ones as censored observations lands."""
    mu = math.log(1000) - 1.2**2 / 2
    for seed in range(3):
        done = _simulate(1_000_000, 8192, 256, lambda rng: rng.lognormvariate(mu, 1.2), seed=seed)
        assert 0.97 * 1_000_000 <= done <= 1.01 * 1_000_000, (seed, done)


def test_running_generations_lengthen_the_prediction():
    """The same finished lengths, but requests running longer than most of them: the estimate
    of a new request's length grows (they are evidence of a long tail), yet never past the
    limit."""
    model = _model([100] * 50 + [400] * 10, max_new=1000)
    alone = model.estimate([]).moments([0.0])[0][0]
    with_long = model.estimate([500.0] * 30).moments([0.0])[0][0]
    assert alone < with_long <= 1000
    # A request that ran past every finished one is predicted at the limit.
    assert model.estimate([950.0]).moments([950.0])[0][0] == 1000


def test_fixed_mode_keeps_exactly_max_requests():
    v = ServerView(kv_tokens=1000, max_running=None, in_flight=7, in_flight_tokens=10**9)
    assert server_admits(v, 100, mode="fixed", max_requests=8, tokens_factor=1.5)
    v8 = ServerView(kv_tokens=1000, max_running=None, in_flight=8, in_flight_tokens=0)
    assert not server_admits(v8, 100, mode="fixed", max_requests=8, tokens_factor=1.5)


def test_auto_mode_follows_the_kv_pool_and_never_leaves_a_server_idle():
    kw = dict(mode="auto", max_requests=None, tokens_factor=1.5)
    assert server_admits(ServerView(4096, None, 10, 5000), 1000, **kw)  # 6000 ≤ 6144
    assert not server_admits(ServerView(4096, None, 10, 5500), 1000, **kw)  # 6500 > 6144
    assert server_admits(ServerView(4096, None, 0, 0), 100_000, **kw)  # idle: always one


def test_auto_mode_keeps_a_short_queue():
    kw = dict(mode="auto", max_requests=None, tokens_factor=1.5)
    busy = ServerView(100_000, None, 50, 1000, queue=6, running=40, token_usage=0.95)
    assert not server_admits(busy, 100, **kw)
    short = ServerView(100_000, None, 41, 1000, queue=1, running=40, token_usage=0.95)
    assert server_admits(short, 100, **kw)
    # Requests sent since the last reading wait too: 50 in flight, 40 running, 1 queued then.
    sent_since = ServerView(100_000, None, 50, 1000, queue=1, running=40, token_usage=0.95)
    assert not server_admits(sent_since, 100, **kw)
    # A queue with room in the pool is SGLang holding back for its reservations: it would
    # only wait. A server that had no queue admits at once: the ramp doubles per reading.
    held_back = ServerView(100_000, None, 11, 1000, queue=6, running=5, token_usage=0.2)
    assert not server_admits(held_back, 100, **kw)
    ramp = ServerView(100_000, None, 9, 1000, queue=0, running=5, token_usage=0.2)
    assert server_admits(ramp, 100, **kw)
    assert not server_admits(replace(ramp, in_flight=10), 100, **kw)
    assert not server_admits(ServerView(100_000, None, 1, 0, healthy=False), 1, **kw)


def test_least_loaded_server_is_chosen():
    kw = dict(mode="auto", max_requests=None, tokens_factor=1.5)
    views = [
        ServerView(1000, None, 3, 900),
        ServerView(4000, None, 3, 900),
        ServerView(1000, None, 1, 100, healthy=False),
    ]
    assert pick_server(views, 100, **kw) == 1
    full = [ServerView(1000, None, 3, 1500), ServerView(1000, None, 3, 1450)]
    assert pick_server(full, 100, **kw) is None


def test_long_requests_still_running_are_not_forgotten():
    """Early completions are the short ones; requests running far longer than any of them must
    make admission careful, not eager."""
    early = _model([20] * 8, max_new=256)
    alone = budget_admits(
        budget=2700, done=160, in_flight=[0] * 20, in_flight_known=0, new_known=0, model=early
    )
    assert alone  # nothing known about those in flight
    long_running = [200.0] * 10 + [0.0] * 10
    assert not budget_admits(
        budget=2700, done=160, in_flight=long_running, in_flight_known=0, new_known=0, model=early
    )


def test_survival_is_conditioned_on_what_each_generation_made():
    # Eight of 100 tokens, eight of 300, and the prior's one at maxNewTokens (1,000).
    est = _model([100] * 8 + [300] * 8).estimate()
    steps = np.array([0.0, 99.0, 100.0, 299.0, 300.0])
    fresh, halfway = est.survival([0.0, 150.0], steps)
    assert fresh == pytest.approx([1, 1, 9 / 17, 9 / 17, 1 / 17])
    # One that made 150 is not one of the 100s: it runs on at least to 300, then 1 in 9.
    assert halfway == pytest.approx([1, 1, 1, 1 / 9, 1 / 9])


def _ends_after(steps: float) -> np.ndarray:
    return (steps > HORIZON).astype(float)


def test_expected_peak_counts_growth_until_each_request_ends():
    # Two requests of 100 held: one ends in 10 steps, the other in 50 — the peak is just before
    # the first ends (2 × 109 = 218), not their final sizes summed (110 + 150).
    mean, var, most = kv_moments(
        np.array([100.0, 100.0]), np.stack([_ends_after(10), _ends_after(50)])
    )
    assert expected_peak(mean.sum(0), var.sum(0), most.sum(0)) == 218
    # Uncertain lengths leave a margin: 100 requests each ending now or running on, even odds,
    # are expected to peak above 50 that surely run on...
    rows = kv_moments(np.full(100, 100.0), np.full((100, len(HORIZON)), 0.5))
    sure = kv_moments(np.full(50, 100.0), np.ones((50, len(HORIZON))))
    assert expected_peak(*(a.sum(0) for a in sure)) < expected_peak(*(a.sum(0) for a in rows))
    # ... but never above what they hold if none ends: four big ones, coin flips each.
    few = kv_moments(np.full(4, 1_000.0), np.full((4, len(HORIZON)), 0.9) * _ends_after(5))
    assert expected_peak(*(a.sum(0) for a in few)) == 4 * (1_000 + 4)


def test_auto_mode_admits_while_the_expected_peak_fits_the_pool():
    kw = dict(mode="auto", max_requests=None, tokens_factor=10.0)
    kv = 160_000  # the expected peak may reach PEAK_SHARE × kv = 155,200
    assert PEAK_SHARE * kv == pytest.approx(155_200)
    # 20 coding requests half-way: 4,000 prompt + 2,000 made, ending in 1,800 steps: they
    # peak at 20 × (6,000 + the last step weighed before 1,800).
    last = HORIZON[HORIZON < 1_800].max()
    mean, var, most = kv_moments(np.full(20, 6_000.0), np.tile(_ends_after(1_800), (20, 1)))
    view = ServerView(kv, None, 20, 0, kv_mean=mean.sum(0), kv_var=var.sum(0), kv_most=most.sum(0))
    assert 20 * (6_000 + last) <= PEAK_SHARE * kv < 20 * (6_000 + last) + 4_000
    # Another coding request (4,000 prompt, 3,800 to go) would push them past the pool before
    # they end; a short one that ends within 100 steps leaves their peak as it is.
    assert not server_admits(view, 7_800, prompt=4_000, alive=_ends_after(3_800), **kw)
    assert server_admits(view, 1_100, prompt=200, alive=_ends_after(100), **kw)


def test_progress_is_scaled_to_what_the_server_reports_held():
    prompts = np.array([1_000.0, 100.0, 100.0])
    made = np.array([400.0, 200.0, 50.0])  # from time in flight: queue wait counted too
    # The two oldest run and hold 1,400 (1,100 of prompts): 300 made, not 600; the third waits.
    assert list(calibrated_progress(prompts, made, 2, 1_400.0)) == [200, 100, 0]
    # Never more than time allows, never less than nothing.
    assert list(calibrated_progress(prompts, made, 2, 5_000.0)) == [400, 200, 0]
    assert list(calibrated_progress(prompts, made, 2, 500.0)) == [0, 0, 0]
    assert list(calibrated_progress(prompts, made, 0, 1_400.0)) == [0, 0, 0]
