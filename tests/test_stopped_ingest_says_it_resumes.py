"""Ctrl-C in the middle of ``selfcrag ingest`` says what the next run does: go on from where this one stopped.

The model is the counting loopback endpoint of :mod:`test_resumed_ingest`; it holds the request that reaches
half the sentences until the test has sent Ctrl-C, so the interrupt lands with half the vectors computed.
"""

from __future__ import annotations

import os
import signal
import subprocess

from cli_runner import selfcrag
from loopback import serve
from test_resumed_ingest import (
    DOCUMENTS,
    SENTENCES_PER_DOCUMENT,
    CountingEmbeddings,
    cli_environment,
    held_ingest,
    write_corpus,
)

HALF = DOCUMENTS * SENTENCES_PER_DOCUMENT // 2
# The model call in flight when Ctrl-C came is not kept: at most one batch is embedded twice.
BATCH = 64


def test_ctrl_c_during_ingest_says_the_next_run_goes_on_and_the_next_run_does(tmp_path):
    write_corpus(tmp_path / "kb")
    CountingEmbeddings.count_from_zero(hold_at=HALF)
    with serve(CountingEmbeddings) as url:
        env = cli_environment(url)
        # A session of its own, so that Ctrl-C can reach the command and its child as a terminal sends it.
        with held_ingest(tmp_path, "data", url, stderr=subprocess.PIPE, text=True, start_new_session=True) as proc:
            os.killpg(proc.pid, signal.SIGINT)
            CountingEmbeddings.release.set()
            _, errors = proc.communicate(timeout=120)
        assert proc.returncode == 130, errors
        last = errors.strip().splitlines()[-1]
        assert last == (
            "interrupted: the previous index is unchanged; run the ingest again: it goes on from where this one stopped"
        )

        CountingEmbeddings.texts, CountingEmbeddings.hold_at = [], None
        again = selfcrag("ingest", "kb", "--data-dir", "data", cwd=tmp_path, **env)
        embedded_again = len(CountingEmbeddings.texts)
    assert again.returncode == 0, again.stderr
    assert "kept from an interrupted ingest" in again.stdout
    assert embedded_again <= HALF + BATCH, "the vectors computed before Ctrl-C were embedded again"
