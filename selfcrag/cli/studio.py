"""``selfcrag studio``: LangGraph Studio's dev server for the graph, run from a folder of its own.

``langgraph dev`` keeps its threads and runs as pickles in ``.langgraph_api/`` under the folder it runs in, and
loads them when it starts, whatever ``disable_persistence`` says (langgraph-runtime-inmem's ``start_pool``): a
``.langgraph_api/.langgraph_ops.pckl`` planted in a folder runs its code in a ``langgraph dev`` started there.
This command runs the server in a new private temporary folder, on a configuration naming the graph by its
absolute path, and removes the folder when the server stops. The index is the one the other commands use.

Whoever reaches the server chooses a run's context, so the server is marked as serving (``SELFCRAG_SERVED``):
a run may not choose another index or server unless ``SELFCRAG_RUN_CONTEXT_ALLOWS`` names the knob
(:mod:`selfcrag.graph.context`). The command says in one line what runs may set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from selfcrag.cli.app import DataDir, app, context_for, err, fail, user_errors


def _langgraph() -> str | None:
    """The langgraph CLI beside this interpreter (a venv need not be on PATH), else on PATH."""
    return shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")


def studio_config() -> dict[str, object]:
    """The dev server's configuration: the graph by its absolute path, marked as served."""
    from importlib.util import find_spec

    from selfcrag.graph.context import SERVED

    spec = find_spec("selfcrag.graph.builder")
    assert spec is not None and spec.origin is not None
    return {
        "dependencies": ["."],
        "graphs": {"selfcrag": f"{Path(spec.origin).resolve()}:graph"},
        "env": {SERVED: "1"},
    }


def what_runs_may_set(allowed: frozenset[str]) -> str:
    """The one line that says which knobs a run's context may set on the served graph.

    Args:
        allowed: The knobs ``SELFCRAG_RUN_CONTEXT_ALLOWS`` names.

    Returns:
        The line.
    """
    from selfcrag.graph.context import RUN_CONTEXT_ALLOWS, SERVER_CHOSEN_KNOBS

    kept = [name for name in SERVER_CHOSEN_KNOBS if name not in allowed]
    let = [name for name in SERVER_CHOSEN_KNOBS if name in allowed]
    line = "a run's context may set every knob"
    if kept:
        line += f" but {', '.join(kept)} (the server's are used; list them in {RUN_CONTEXT_ALLOWS} to allow them)"
    if let:
        line += f"; {RUN_CONTEXT_ALLOWS} lets it set {', '.join(let)}"
    return line


@app.command()
def studio(
    port: Annotated[int, typer.Option(help="Port to serve on.")] = 2024,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    browser: Annotated[bool, typer.Option("--browser/--no-browser", help="Open Studio in a browser.")] = True,
    data_dir: DataDir = None,
) -> None:
    """Serve the graph to LangGraph Studio (langgraph dev), from a private folder nothing can be planted in."""
    langgraph = _langgraph()
    if langgraph is None:
        raise fail("langgraph-cli is not installed: pip install 'selfcrag[dev]' (it brings langgraph-cli[inmem])")
    from selfcrag.graph.context import SERVED, run_context_allows
    from selfcrag.index.generations import check_data_dir

    with user_errors():
        index = context_for(data_dir).settings().data_dir.resolve()
        check_data_dir(index)  # refused now, not in every run the server is sent
        allowed = run_context_allows()
    # No usage analytics from the CLI and no traces sent to LangSmith, unless asked for.
    env = {
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        **os.environ,
        "SELFCRAG_DATA_DIR": str(index),
        SERVED: "1",
    }
    err.print(what_runs_may_set(allowed), markup=False, soft_wrap=True)
    with tempfile.TemporaryDirectory(prefix="selfcrag-studio-") as folder:
        config = Path(folder) / "langgraph.json"
        config.write_text(json.dumps(studio_config()), encoding="utf-8")
        command = [langgraph, "dev", "--config", str(config), "--host", host, "--port", str(port), "--no-reload"]
        if not browser:
            command.append("--no-browser")
        try:
            status = subprocess.run(command, cwd=folder, env=env, check=False).returncode
        except KeyboardInterrupt:
            status = 130
    raise typer.Exit(status)
