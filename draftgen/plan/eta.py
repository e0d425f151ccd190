"""How long the budgets take: completion tokens to generate per dataset, over a throughput.

A dataset's work is its completion-token budget; a `maxSamples` budget is samples × the mean
completion; a `totalTokens` budget is the completion share of it. With several limits the first
reached counts. Datasets run interleaved, so the total is the sum over one shared throughput
(80M tokens at 930 tok/s ≈ 24 h), and each dataset finishes when its own work is done at its
share of that throughput: the generator keeps the same number of requests in flight for every
unfinished dataset (the one with the fewest first), so each gets an equal share while it runs and
the others' shares grow as datasets finish. A small dataset among large ones is done early; the
last one ends with the total.

This is the one rule for both ETAs in a GenerationJob's status: the planner's (`status.plan`,
from expected lengths) and the generator's (`status.eta`, from the lengths measured so far, via
`draftgen.work.remaining_completion_tokens`, the same limits).
"""

from __future__ import annotations

from dataclasses import dataclass

from draftgen.timefmt import format_duration
from draftgen.work import work_options

from .concurrency import DatasetLengths


@dataclass(frozen=True)
class DatasetWork:
    """Completion tokens one dataset still has to generate, and why that many."""

    name: str
    completion_tokens: float | None
    """None when the dataset has no budget the planner can turn into tokens."""

    samples: float | None
    """Expected samples (needs the mean completion length)."""

    basis: str
    done_tokens: int = 0

    @property
    def remaining_tokens(self) -> float | None:
        if self.completion_tokens is None:
            return None
        return max(self.completion_tokens - self.done_tokens, 0.0)


def dataset_work(
    name: str,
    completion_budget: int | None,
    total_budget: int | None,
    max_samples: int | None,
    lengths: DatasetLengths,
    done_tokens: int = 0,
) -> DatasetWork:
    """The completion tokens a dataset's budget asks for (the smallest of its limits)."""
    prompt, completion = lengths.prompt_tokens, lengths.completion_tokens
    options = work_options(completion_budget, total_budget, max_samples, prompt, completion)
    if not options:
        needs = (
            "a budget"
            if completion_budget is None and total_budget is None and max_samples is None
            else "mean prompt/completion lengths for its budget"
        )
        return DatasetWork(name, None, None, f"unknown: needs {needs}", done_tokens)
    tokens, basis = min(options)
    samples = tokens / completion if completion else None
    return DatasetWork(name, tokens, samples, basis, done_tokens)


@dataclass(frozen=True)
class Eta:
    """Time for every dataset at one throughput."""

    throughput_tokens_per_second: float
    basis: str
    """`ceiling` or `measured`."""

    per_dataset_seconds: dict[str, float | None]
    """When each dataset is expected to finish, from now, running interleaved with the others
    (`finish_times`); None when its work is unknown."""

    share_seconds: dict[str, float | None]
    """Each dataset's share of the run (its tokens at the full rate)."""

    total_tokens: float
    total_seconds: float | None
    """None when some dataset's work is unknown."""

    @property
    def total(self) -> str:
        return format_duration(self.total_seconds)


def eta(work: list[DatasetWork], throughput_tokens_per_second: float, basis: str) -> Eta:
    """Seconds per dataset and in total, at one throughput."""
    if throughput_tokens_per_second <= 0:
        raise ValueError(f"throughput must be positive, got {throughput_tokens_per_second}")
    share = {
        w.name: (
            None
            if w.remaining_tokens is None
            else w.remaining_tokens / throughput_tokens_per_second
        )
        for w in work
    }
    known = sum(w.remaining_tokens or 0.0 for w in work)
    complete = all(w.remaining_tokens is not None for w in work)
    return Eta(
        throughput_tokens_per_second,
        basis,
        finish_times(work, throughput_tokens_per_second),
        share,
        known,
        known / throughput_tokens_per_second if complete else None,
    )


def finish_times(work: list[DatasetWork], throughput: float) -> dict[str, float | None]:
    """Seconds until each dataset finishes when all run at once with equal shares of
    `throughput`, a finished dataset's share going to the rest. A dataset of unknown work keeps
    its share throughout (it runs until its rows end), so the others' times are upper bounds."""
    unknown = sum(1 for w in work if w.remaining_tokens is None)
    known = sorted(
        (w for w in work if w.remaining_tokens is not None), key=lambda w: w.remaining_tokens or 0.0
    )
    out: dict[str, float | None] = {w.name: None for w in work}
    clock, done_tokens = 0.0, 0.0
    for i, w in enumerate(known):
        running = len(known) - i + unknown
        remaining = w.remaining_tokens or 0.0
        clock += (remaining - done_tokens) * running / throughput
        done_tokens = remaining
        out[w.name] = clock
    return out
