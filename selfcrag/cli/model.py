"""``selfcrag model check``: what the configured chat endpoint can do, and the settings that fit it.

It lists the endpoint's models, asks for a structured reply each way (JSON schema, function calling, JSON mode),
streams a short reply, and times a long prompt and a short generation. From those speeds it estimates what one
question costs (the workflow's own prompts, at the configured ``top_k`` and token limits) and prints a question
deadline and a request timeout that fit, as the variables to set. The ways the endpoint refused are remembered in
the data folder, as a question would remember them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from selfcrag.cli.app import DataDir, app, context_for, fail, out, user_errors
from selfcrag.cli.terminal import json_text, one_line

if TYPE_CHECKING:
    from selfcrag.graph.context import Context
    from selfcrag.llm.probe import Speed

model_app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="The chat model endpoint: check what it can do.",
)
app.add_typer(model_app, name="model")

# How much longer than the estimate a question may take: the loops (a rewrite, a regeneration) and a busy server.
DEADLINE_MARGIN = 1.5
# How much longer than the slowest estimated step one request may take.
TIMEOUT_MARGIN = 2.0
# Characters of a retrieved passage as a prompt quotes it, per sentence of its window, and its header.
SENTENCE_CHARS = 150
PASSAGE_HEADER_CHARS = 80
# Tokens an answer usually takes (at most max_answer_tokens), and the short structured replies.
TYPICAL_ANSWER_TOKENS = 250


@dataclass
class StepEstimate:
    """One chat step of a question: its prompt, its reply, and the seconds they take at the measured speed."""

    step: str
    prompt_chars: int
    reply_tokens: int
    seconds: float


def estimate_question(speed: Speed, context: Context) -> list[StepEstimate]:
    """Estimate the chat steps of one retrieved question (route, grade, answer, support check) at a measured speed.

    The prompts are the workflow's own, in English, with ``top_k`` passages of ``window`` sentences each side.

    Args:
        speed: The endpoint's measured speed.
        context: The settings (``top_k``, ``window``, token limits).

    Returns:
        One estimate per step, in order.
    """
    from selfcrag.prompts.answering import GENERATE_SYSTEM, GENERATE_USER
    from selfcrag.prompts.grading import GRADE_SYSTEM, GRADE_USER
    from selfcrag.prompts.routing import DECIDE_SYSTEM, DECIDE_USER
    from selfcrag.prompts.support import SUPPORT_SYSTEM, SUPPORT_USER

    passages = context.top_k * ((2 * context.window + 1) * SENTENCE_CHARS + PASSAGE_HEADER_CHARS)
    answer_tokens = min(TYPICAL_ANSWER_TOKENS, context.max_answer_tokens)
    answer_chars = round(answer_tokens * speed.chars_per_token)
    steps = [
        ("decide_retrieval", len(DECIDE_SYSTEM["en"]) + len(DECIDE_USER["en"]) + 200, 10),
        ("grade_documents", len(GRADE_SYSTEM["en"]) + len(GRADE_USER["en"]) + passages, 15 * context.top_k),
        ("generate", len(GENERATE_SYSTEM["en"]) + len(GENERATE_USER["en"]) + passages, answer_tokens),
        ("check_support", len(SUPPORT_SYSTEM["en"]) + len(SUPPORT_USER["en"]) + passages + answer_chars, 60),
    ]
    estimates = []
    for step, chars, tokens in steps:
        tokens = tokens if step == "generate" else min(tokens, context.max_decision_tokens)
        estimates.append(StepEstimate(step, chars, tokens, round(speed.seconds(chars, tokens), 2)))
    return estimates


def fitting_settings(estimates: list[StepEstimate]) -> tuple[int, int]:
    """A question deadline and a request timeout that leave room for the estimated steps.

    Args:
        estimates: The steps of one question.

    Returns:
        ``question_deadline`` and ``request_timeout``, in whole seconds, rounded up to 5 (at least 10, at most 3,600).
    """
    total = sum(step.seconds for step in estimates) * DEADLINE_MARGIN
    slowest = max(step.seconds for step in estimates) * TIMEOUT_MARGIN
    return _round_up(total), _round_up(slowest)


def _round_up(seconds: float) -> int:
    return int(min(max(math.ceil(seconds / 5) * 5, 10), 3600))


@model_app.command("check")
def check(
    data_dir: DataDir = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as one JSON object.")] = False,
) -> None:
    """Probe the configured chat endpoint: models, structured output, streaming, speed, and the settings that fit.

    Exit status: 0 when the endpoint answered and some way of asking for structured replies works, 1 otherwise.
    """
    from langchain_core.messages import HumanMessage, SystemMessage

    from selfcrag.files.sample import sample_kb
    from selfcrag.graph.resources import Resources
    from selfcrag.llm.chat import endpoint_of, limited
    from selfcrag.llm.probe import check_modes, check_streaming, list_models, measure_speed
    from selfcrag.llm.retry import describe_failure
    from selfcrag.llm.structured import CHAT_FAILURES
    from selfcrag.prompts.routing import DECIDE_SYSTEM, DECIDE_USER

    with user_errors():
        context = context_for(data_dir, answerer="chat")
        settings = context.settings()
        with Resources() as resources:
            model = resources.chat_model(context)
            memory = resources.endpoint_memory(context)
    assert model is not None  # answerer="chat": a missing endpoint is a user error above
    where = settings.openai_base_url or "https://api.openai.com/v1"
    report: dict[str, Any] = {"endpoint": where, "model": context.chat_model}
    try:
        report["models"] = list_models(settings.openai_base_url, settings.openai_api_key, context.request_timeout)
    except CHAT_FAILURES as error:
        raise fail(f"cannot reach the chat endpoint at {where}: {describe_failure(error)}") from None

    question = "Hello! What can you do?"
    routing = [
        SystemMessage(DECIDE_SYSTEM["en"]),
        HumanMessage(DECIDE_USER["en"].format(history="(none)", question=question)),
    ]
    modes = check_modes(model, routing, context.max_decision_tokens)
    report["structured_output"] = [asdict(mode) for mode in modes]
    refused = {mode.method: mode.detail for mode in modes if mode.outcome == "refused"}
    report["remembered_in"] = str(memory.path) if memory.replace(endpoint_of(model), refused) else None
    working = [mode.method for mode in modes if mode.outcome == "works"]
    report["streaming"] = dict(zip(("works", "detail"), check_streaming(limited(model, max_tokens=16)), strict=True))

    filler = "\n".join(path.read_text(encoding="utf-8") for path in sorted((sample_kb() / "en").glob("*.md")))
    try:
        speed = measure_speed(model, filler)
    except CHAT_FAILURES as error:
        report["speed"] = {"error": describe_failure(error)}
    else:
        estimates = estimate_question(speed, context)
        deadline, timeout = fitting_settings(estimates)
        report["speed"] = {
            "prompt_tokens_per_s": round(speed.prompt_rate, 1),
            "generation_tokens_per_s": round(speed.generation_rate, 1),
            **asdict(speed),
        }
        report["question"] = {
            "estimated_s": round(sum(step.seconds for step in estimates), 1),
            "steps": [asdict(step) for step in estimates],
            # Only ever raised: a setting that already leaves more room is kept.
            "set": {
                "SELFCRAG_QUESTION_DEADLINE": max(deadline, math.ceil(context.question_deadline)),
                "SELFCRAG_REQUEST_TIMEOUT": max(timeout, math.ceil(context.request_timeout)),
            },
            "now": {
                "SELFCRAG_QUESTION_DEADLINE": context.question_deadline,
                "SELFCRAG_REQUEST_TIMEOUT": context.request_timeout,
            },
            "fits": deadline <= context.question_deadline and timeout <= context.request_timeout,
        }
    if as_json:
        print(json_text(report))
    else:
        _print(report, working)
    if not working:
        raise typer.Exit(1)


def _print(report: dict[str, Any], working: list[str]) -> None:
    """Write the findings for a person, one fact a line."""
    lines = [f"endpoint    {report['endpoint']}  (SELFCRAG_CHAT_MODEL={report['model']})"]
    models = report["models"]
    lines.append(f"models      {', '.join(models) if models else '(none listed)'}")
    if models and report["model"] not in models:
        lines.append(
            f"            {report['model']} is not listed: a server that serves one model (llama.cpp) answers any "
            f"name; others (Ollama, vLLM) need SELFCRAG_CHAT_MODEL={models[0]}"
        )
    lines.append("structured output")
    for mode in report["structured_output"]:
        detail = f": {mode['detail']}" if mode["detail"] else ""
        lines.append(f"  {mode['method']:<17} {mode['outcome']}{detail}")
    if working:
        remembered = f" (refusals remembered in {report['remembered_in']})" if report["remembered_in"] else ""
        lines.append(f"  → questions ask with {working[0]}{remembered}")
    else:
        lines.append("  → no way works: every graded step will answer offline")
    streaming = report["streaming"]
    lines.append(f"streaming   {'works' if streaming['works'] else 'does not work'} ({streaming['detail']})")
    speed = report["speed"]
    if "error" in speed:
        lines.append(f"speed       not measured: {speed['error']}")
    else:
        lines.append(
            f"speed       prompt {speed['prompt_tokens_per_s']:,.0f} tokens/s ({speed['prompt_tokens']:,} tokens in "
            f"{speed['prompt_seconds']:.1f} s) · generation {speed['generation_tokens_per_s']:,.0f} tokens/s "
            f"({speed['generated_tokens']} tokens in {speed['generation_seconds']:.1f} s)"
        )
        question = report["question"]
        steps = ", ".join(f"{step['step']} {step['seconds']:.1f} s" for step in question["steps"])
        lines.append(f"question    about {question['estimated_s']:.0f} s of chat model time ({steps})")
        now = " ".join(f"{name}={value:g}" for name, value in question["now"].items())
        if question["fits"]:
            lines.append(f"settings    the current ones fit ({now})")
        else:
            wanted = " ".join(f"{name}={value}" for name, value in question["set"].items())
            lines.append(f"settings    set: export {wanted}   (now {now})")
    for line in lines:
        out.print(one_line(line), markup=False, soft_wrap=True)
