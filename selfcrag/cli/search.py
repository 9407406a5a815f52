"""``selfcrag search``: retrieve passages without answering."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from selfcrag.cli.app import DataDir, app, context_for, fail, out, user_errors
from selfcrag.cli.render import source_fields
from selfcrag.cli.terminal import json_text, one_line, visible


@app.command()
def search(
    question: Annotated[str, typer.Argument(help="What to look for.")],
    k: Annotated[int, typer.Option("-k", "--top-k", help="Passages to return.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for programs.")] = False,
    mode: Annotated[str, typer.Option(help="hybrid, dense or bm25.")] = "hybrid",
    fusion: Annotated[str, typer.Option(help="rrf or weighted.")] = "rrf",
    window: Annotated[int | None, typer.Option(help="Sentences each side of a hit.")] = None,
    data_dir: DataDir = None,
) -> None:
    """Retrieve the best passages for a question (no answer generation)."""
    from selfcrag.graph.question import prepare_question
    from selfcrag.search.retriever import Retriever

    with user_errors():
        # As ask and chat clean it: no control characters, nor a command line's undecodable bytes (the embedder
        # cannot encode them), and a bounded length.
        question = prepare_question(question).text
    if mode not in ("hybrid", "dense", "bm25") or fusion not in ("rrf", "weighted"):
        raise fail("--mode takes hybrid, dense or bm25; --fusion takes rrf or weighted")
    with user_errors():
        context = context_for(data_dir, top_k=k, window=window)
        config = context.search_config(mode=mode, fusion=fusion)
        with Retriever(context.settings(), config) as retriever:
            result = retriever.search(question)
    if as_json:
        print(
            json_text(
                {
                    "query": result.query,
                    "timings_ms": result.timings_ms,
                    "passages": result.passages,
                }
            )
        )
        return
    if not result.passages:
        out.print("no matching passages", markup=False)
    for rank, passage in enumerate(result.passages, 1):
        where = " > ".join(passage["section"]) or passage["title"]
        ranks = (
            f"dense #{passage['dense_rank'] or '-'}, bm25 #{passage['bm25_rank'] or '-'}, fused {passage['score']:.4f}"
        )
        # File, section, page or lines, and the form to open it there: `docs/guide.pdf#page=6`, `docs/a.md:12`.
        fields = source_fields(
            passage["path"],
            one_line(where),
            passage["where"],
            passage["link"],
            passage["first"],
            passage["last"],
            passage["also"],
        )
        # File names, headings and text come from the user's documents: printed as text, never as markup or
        # escape sequences.
        out.print(
            Text.assemble((f"[{rank}]", "bold"), " " + " | ".join([*fields, ranks])),
            soft_wrap=not out.is_terminal,
        )
        out.print(Text(visible(passage["text"].strip())), soft_wrap=not out.is_terminal)
        out.print()
