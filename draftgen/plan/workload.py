"""The work side of a plan: each dataset's lengths and tokens to generate, the decodes that fit
in the KV pool and the throughput ceiling they set, and the ETA with the guesses it rests on."""

from __future__ import annotations

from draftgen.spec import GenerationJob

from . import concurrency
from . import eta as eta_mod
from .concurrency import DatasetLengths
from .figures import Plan, PlanInputs


def _lengths(job: GenerationJob, inputs: PlanInputs) -> list[DatasetLengths]:
    planning = job.spec.planning
    out = []
    for ds in job.spec.datasets:
        exp = ds.expected
        candidates = [
            ("command line", inputs.mean_prompt_tokens, inputs.mean_completion_tokens),
            ("dataset", exp.prompt_tokens if exp else None, exp.completion_tokens if exp else None),
            ("job", planning.mean_prompt_tokens, planning.mean_completion_tokens),
        ]
        prompt = next((p for _, p, _ in candidates if p is not None), None)
        completion = next((c for _, _, c in candidates if c is not None), None)
        source = next((s for s, p, c in candidates if p is not None or c is not None), "unknown")
        out.append(DatasetLengths(ds.name, prompt, completion, source))  # type: ignore[arg-type]
    return out


def plan_throughput(plan: Plan, job: GenerationJob, inputs: PlanInputs) -> None:
    """Lengths and work per dataset, the decodes that fit, the ceiling and the verdict on a
    measured rate (needs `plan.capacity_tokens` for the decodes)."""
    server = job.spec.server
    plan.lengths = _lengths(job, inputs)
    for ds, lengths in zip(job.spec.datasets, plan.lengths):
        done = inputs.done_completion_tokens.get(ds.name, 0)
        plan.work.append(
            eta_mod.dataset_work(
                ds.name,
                ds.budget.completion_tokens,
                ds.budget.total_tokens,
                ds.budget.max_samples,
                lengths,
                done,
            )
        )
    samples = {w.name: w.samples for w in plan.work if w.samples}
    plan.mean_sequence_tokens = concurrency.mean_sequence_tokens(plan.lengths, samples)
    if plan.mean_sequence_tokens is None:
        plan.missing.append(
            "mean prompt and completion lengths: spec.datasets[].expected, "
            "spec.planning.meanPromptTokens/meanCompletionTokens, or "
            "--mean-prompt-tokens/--mean-completion-tokens"
        )
    elif plan.capacity_tokens:
        d = plan.layout.attention_dp
        if d > 1 and plan.rank_pool_tokens and not inputs.observed_kv_capacity_tokens:
            # A request lives in one rank's pool: each rank fits its own whole decodes, and
            # SGLang divides --max-running-requests over the ranks.
            mrr = server.max_running_requests
            plan.decodes = d * concurrency.concurrent_decodes(
                plan.rank_pool_tokens, plan.mean_sequence_tokens, mrr // d if mrr else None
            )
        else:
            plan.decodes = concurrency.concurrent_decodes(
                plan.capacity_tokens, plan.mean_sequence_tokens, server.max_running_requests
            )
    plan.decode_tokens_per_second = (
        inputs.decode_tokens_per_second or job.spec.planning.decode_tokens_per_second
    )
    if plan.decodes is not None and plan.decode_tokens_per_second:
        plan.ceiling_tokens_per_second = concurrency.throughput_ceiling(
            plan.decodes, plan.decode_tokens_per_second
        ) * max(server.replicas, 1)
        if inputs.measured_throughput:
            plan.verdict = concurrency.explain_throughput(
                inputs.measured_throughput,
                plan.ceiling_tokens_per_second,
                plan.decodes * max(server.replicas, 1),
                plan.decode_tokens_per_second,
            )
    elif plan.decodes is not None:
        plan.missing.append(
            "per-request decode speed for the throughput ceiling: "
            "spec.planning.decodeTokensPerSecond or --decode-tokens-per-second"
        )


def plan_eta(plan: Plan, inputs: PlanInputs) -> None:
    """The ETA at the measured rate, else at the ceiling; the datasets without a token figure."""
    rate, basis = (
        (inputs.measured_throughput, "measured")
        if inputs.measured_throughput
        else (plan.ceiling_tokens_per_second, "ceiling")
    )
    if rate:
        plan.eta = eta_mod.eta(plan.work, rate, basis)
        plan.eta_guesses = _eta_guesses(plan, inputs)
    for w in plan.work:
        if w.completion_tokens is None:
            plan.missing.append(f"dataset {w.name}: {w.basis.removeprefix('unknown: ')}")


_LENGTHS_FROM = {
    "job": "spec.planning.meanPromptTokens/meanCompletionTokens (one guess for every dataset)",
    "command line": "--mean-prompt-tokens/--mean-completion-tokens (one guess for every dataset)",
    "dataset": "its spec.datasets[].expected (an estimate)",
}


def _eta_guesses(plan: Plan, inputs: PlanInputs) -> list[str]:
    """Which inputs of the ETA were guessed rather than measured, and where each came from."""
    assert plan.eta is not None
    out = []
    ceiling = plan.eta.basis == "ceiling"
    if ceiling:
        out.append(
            f"throughput: the ceiling at {plan.decode_tokens_per_second:g} tok/s per decode "
            "(spec.planning.decodeTokensPerSecond or --decode-tokens-per-second), not a measured "
            "rate; pass --measured-throughput once the server runs"
        )
        memory = plan.memory
        if inputs.observed_kv_capacity_tokens is None and memory and memory.source == "estimated":
            out.append(
                "KV capacity: estimated from the GPU memory and the weights' size; measure "
                "one start (spec.planning.measured or --from-log)"
            )
    guessed: dict[tuple[str, int | None, int | None], list[str]] = {}
    for lengths, work in zip(plan.lengths, plan.work):
        # Lengths set the decodes (ceiling) and turn sample or total budgets into tokens.
        if work.completion_tokens is None:
            continue
        if (ceiling or not work.basis.startswith("completionTokens")) and (
            lengths.source in _LENGTHS_FROM
        ):
            key = (lengths.source, lengths.prompt_tokens, lengths.completion_tokens)
            guessed.setdefault(key, []).append(lengths.name)
    for (source, prompt, completion), names in guessed.items():
        which = f"dataset {names[0]}" if len(names) == 1 else f"datasets {', '.join(names)}"
        out.append(
            f"{which}: mean prompt {_num(prompt)} / completion {_num(completion)} tokens from "
            f"{_LENGTHS_FROM[source]}"
        )
    return out


def _num(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"
