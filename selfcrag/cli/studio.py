"""``selfcrag studio``: LangGraph Studio's dev server for the graph, run from a folder of its own.

``langgraph dev`` keeps its threads and runs as pickles in ``.langgraph_api/`` under the folder it runs in, and
loads them when it starts, whatever ``disable_persistence`` says (langgraph-runtime-inmem's ``start_pool``): a
``.langgraph_api/.langgraph_ops.pckl`` planted in a folder runs its code in a ``langgraph dev`` started there.
This command runs the server in a new private temporary folder, on a configuration naming the graph by its
absolute path, and removes the folder when the server stops. The index is the one the other commands use.
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

from selfcrag.cli.app import DataDir, app, context_for, fail, user_errors


def _langgraph() -> str | None:
    """The langgraph CLI beside this interpreter (a venv need not be on PATH), else on PATH."""
    return shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")


def studio_config() -> dict[str, object]:
    """The dev server's configuration: the graph by its absolute path."""
    from importlib.util import find_spec

    spec = find_spec("selfcrag.graph.builder")
    assert spec is not None and spec.origin is not None
    return {
        "dependencies": ["."],
        "graphs": {"selfcrag": f"{Path(spec.origin).resolve()}:graph"},
    }


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
    with user_errors():
        index = context_for(data_dir).settings().data_dir.resolve()
    # No usage analytics from the CLI and no traces sent to LangSmith, unless asked for.
    env = {
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        **os.environ,
        "SELFCRAG_DATA_DIR": str(index),
    }
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
