"""The completion tokens a dataset's limits still ask for: the one rule both ETAs use, the
planner's (`draftgen/plan/eta.py`, from expected lengths) and the generator's (`status.eta` and
the progress figures, from the lengths measured so far). Pure arithmetic: a bottom-layer module
that the planner and the output both import (pyproject.toml's import-linter contracts)."""

from __future__ import annotations


def work_options(
    completion_budget: int | None,
    total_budget: int | None,
    max_samples: int | None,
    prompt: float | None,
    completion: float | None,
) -> list[tuple[float, str]]:
    """(completion tokens, why) for each limit the mean lengths can turn into tokens."""
    options: list[tuple[float, str]] = []
    if completion_budget is not None:
        options.append((float(completion_budget), f"completionTokens {completion_budget:,}"))
    if max_samples is not None and completion is not None:
        options.append(
            (
                float(max_samples * completion),
                f"maxSamples {max_samples:,} × {completion:,} completion tokens",
            )
        )
    if (
        total_budget is not None
        and completion is not None
        and prompt is not None
        and (prompt + completion > 0)
    ):
        options.append(
            (
                total_budget * completion / (prompt + completion),
                f"totalTokens {total_budget:,} × {completion:,}/"
                f"{prompt + completion:,} completion share",
            )
        )
    return options


def remaining_completion_tokens(
    completion_budget: int | None,
    total_budget: int | None,
    max_samples: int | None,
    mean_prompt: float | None,
    mean_completion: float | None,
    done_completion_tokens: int,
) -> float | None:
    """Completion tokens still to generate before a dataset's nearest limit (None: unknown)."""
    options = work_options(
        completion_budget, total_budget, max_samples, mean_prompt, mean_completion
    )
    if not options:
        return None
    return max(min(t for t, _ in options) - done_completion_tokens, 0.0)
