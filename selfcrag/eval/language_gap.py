"""What crossing languages costs, at a glance: a cross-language set's figures beside its one-language twin's.

XQuAD's sets hold the same paragraphs and questions in English and Chinese: ``xq-zh2en`` asks the Chinese
questions of the English paragraphs, ``xq-en`` the English questions of the same paragraphs. Two sets given to
one ``selfcrag eval`` are twins when their questions point at the same documents (the same gold ``doc_id`` of
each question, in order) and one asks them in the documents' language, the other in another language. Any set
in the shared format pairs so; nothing here knows XQuAD's names.
"""

from __future__ import annotations

from collections.abc import Sequence

from selfcrag.eval.sets import EvalSet

Row = dict[str, object]

GAP_COLUMNS = ("set", "same-language set", "config", "hit@5", "same hit@5", "gap hit@5", "mrr@5", "same mrr@5")
_FIGURES = ("hit@1", "hit@5", "mrr@5")


def twins(evalsets: Sequence[EvalSet]) -> list[tuple[str, str]]:
    """The cross-language sets given, each with its one-language twin among the sets given.

    Args:
        evalsets: The sets of one run.

    Returns:
        ``(cross-language set, one-language set)`` names.
    """
    found = []
    for crossed in evalsets:
        asked = _asked_in(crossed)
        if asked is None or asked == _documents_language(crossed):
            continue
        found += [
            (crossed.name, same.name)
            for same in evalsets
            if _asked_in(same) == _documents_language(same) and _gold(same) == _gold(crossed)
        ]
    return found


def gap_rows(rows: Sequence[Row], pairs: Sequence[tuple[str, str]]) -> list[Row]:
    """The retrieval figures of each cross-language set beside its twin's, configuration by configuration.

    Args:
        rows: The run's retrieval rows.
        pairs: From :func:`twins`.

    Returns:
        One row per pair and configuration measured on both, ``mode`` ``language-gap``.
    """
    retrieval = {(r["set"], r["config"]): r for r in rows if r.get("mode") == "retrieval"}
    gaps: list[Row] = []
    for crossed, same in pairs:
        for (name, config), row in retrieval.items():
            twin = retrieval.get((same, config))
            if name != crossed or twin is None:
                continue
            gap: Row = {"mode": "language-gap", "set": crossed, "same-language set": same, "config": config}
            for figure in _FIGURES:
                gap[figure], gap[f"same {figure}"] = row[figure], twin[figure]
                gap[f"gap {figure}"] = round(float(twin[figure]) - float(row[figure]), 4)  # type: ignore[arg-type]
            gaps.append(gap)
    return gaps


def _asked_in(evalset: EvalSet) -> str | None:
    """The language of a set's questions, when they are all in one."""
    languages = {q.lang for q in evalset.questions}
    return languages.pop() if len(languages) == 1 else None


def _gold(evalset: EvalSet) -> tuple[tuple[str, ...], ...]:
    """Each question's gold documents, in order: twins point at the same ones."""
    return tuple(tuple(e.doc_id for e in q.evidence) for q in evalset.questions)


def _documents_language(evalset: EvalSet) -> str | None:
    """The language of a set's documents, read from its first document (the sets are of one language each)."""
    from selfcrag.index.tokenize import detect_language

    first = next(iter(sorted(evalset.docs_dir.glob("*.txt"))), None)
    return detect_language(first.read_text(encoding="utf-8", errors="replace")) if first is not None else None
