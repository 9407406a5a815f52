"""The risk-coverage curve of the offline answer gates: how much is answered at each level of being right.

Offline, a quoted answer is given only when its best sentence is close in
meaning to the question (``answer_similarity``), holds its words
(``answer_coverage``) and stands above the sentences that say something else
(``answer_margin``); the rest is shown as the closest evidence. One run with
the gates open (the ``ungated`` configuration) records, per question, whether
its quote was right and those three measures, so every setting of the gates
is judged without running the workflow again: a question is answered at a
setting when its quote clears all three. Each point of the curve is the
setting that answers the most (the mean share over the sets) while
``answered_right`` stays at or above a floor on every set; the operating point
is the one at 0.95. Choose it on the calibration halves, report the held-out.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# The settings tried: coarse steps, so that the chosen one is not fitted to a handful of questions.
SIMILARITIES = tuple(round(0.50 + 0.05 * i, 2) for i in range(10))
COVERAGES = tuple(round(0.1 * i, 1) for i in range(10))
MARGINS = tuple(round(0.02 * i, 2) for i in range(21))
FLOORS = (1.0, 0.99, 0.98, 0.97, 0.96, 0.95, 0.9, 0.85, 0.8)
OPERATING_FLOOR = 0.95
KNOBS = ("answer_similarity", "answer_coverage", "answer_margin")

Record = Mapping[str, object]


@dataclass(frozen=True)
class Gates:
    """A setting of the offline answer gates (the three knobs of :class:`graph.context.Context`)."""

    similarity: float
    coverage: float
    margin: float

    def passes(self, record: Record) -> bool:
        """Tell whether a question of the ungated run is answered at this setting.

        Args:
            record: Its per-question record (``status``, ``evidence``).

        Returns:
            True for a direct reply, and for an answer whose quote clears the three gates (or was not gated:
            a chat model's); False for the closest evidence and not found.
        """
        if record["status"] == "direct":
            return True
        if record["status"] != "answered":
            return False
        evidence = record.get("evidence")
        if not isinstance(evidence, Mapping):
            return True
        return (
            float(evidence["dense"]) >= self.similarity
            and float(evidence["coverage"]) >= self.coverage
            and float(evidence["margin"]) >= self.margin
        )


def answered_at(records: Sequence[Record], gates: Gates) -> tuple[float, float | None]:
    """Measure one set at one setting.

    Args:
        records: The set's per-question records of the ungated run (``status``, ``correct``, ``evidence``).
        gates: The setting.

    Returns:
        ``answered`` (share of the questions) and ``answered_right`` (share of those right; None when none).
    """
    given = [r for r in records if gates.passes(r)]
    right = sum(bool(r["correct"]) for r in given)
    return (len(given) / len(records) if records else 0.0), (right / len(given) if given else None)


def risk_coverage(records: Mapping[str, Sequence[Record]], floors: Sequence[float] = FLOORS) -> list[dict[str, object]]:
    """The curve over several sets: per floor, the setting answering the most while right on every set.

    Args:
        records: Per set name, its per-question records of the ungated run.
        floors: The ``answered_right`` each point must keep on every set.

    Returns:
        One row per floor that some setting meets: ``floor``, the three knobs, and per set its ``answered`` and
        ``answered_right``; ties go to the stricter setting (higher margin, coverage, similarity).
    """
    settings = [Gates(*values) for values in itertools.product(SIMILARITIES, COVERAGES, MARGINS)]
    measured = [(gates, {name: answered_at(rows, gates) for name, rows in records.items()}) for gates in settings]
    curve = []
    for floor in floors:
        # A set with nothing answered is right about everything it said.
        meeting = [(g, m) for g, m in measured if all(right is None or right >= floor for _, right in m.values())]
        if not meeting:
            continue
        gates, by_set = max(
            meeting,
            key=lambda gm: (sum(a for a, _ in gm[1].values()), gm[0].margin, gm[0].coverage, gm[0].similarity),
        )
        row: dict[str, object] = {
            "mode": "curve",
            "floor": floor,
            "answer_similarity": gates.similarity,
            "answer_coverage": gates.coverage,
            "answer_margin": gates.margin,
        }
        for name, (answered, right) in by_set.items():
            row[f"{name} answered"] = round(answered, 4)
            row[f"{name} answered_right"] = None if right is None else round(right, 4)
        curve.append(row)
    return curve


def operating_point(curve: Sequence[dict[str, object]]) -> dict[str, object] | None:
    """The point of the curve at ``answered_right`` >= 0.95 on every set, if some setting reaches it."""
    return next((row for row in curve if row["floor"] == OPERATING_FLOOR), None)


def curve_columns(curve: Sequence[dict[str, object]]) -> list[str]:
    """The columns of the curve's table: the floor, the knobs, then each set's two measures."""
    per_set = [k for k in dict.fromkeys(k for row in curve for k in row) if k.endswith(("answered", "answered_right"))]
    return ["floor", *KNOBS, *per_set]
