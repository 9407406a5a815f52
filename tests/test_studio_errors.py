"""What LangGraph Studio shows of an error a run raises: the API server's own encoding of it.

The server (``selfcrag studio``, ``langgraph dev``) passes on the message of a ValueError and of a few other
types, and replaces every other error's with "An internal error occurred". A user's mistake (no index yet, a
failing embedding endpoint, a damaged conversation file) must reach Studio as the line that says what to do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langgraph_api.serde import json_dumpb

from selfcrag.errors import EmbeddingServiceError, NoIndexError, SettingError, UserError
from selfcrag.graph.checkpoints import UnreadableConversationError
from selfcrag.index.manifest import ManifestError


@pytest.mark.parametrize(
    "error",
    [
        NoIndexError("nothing is indexed in /srv/kb yet: run `selfcrag ingest PATH` first"),
        EmbeddingServiceError("the embedding endpoint failed (HTTP 503)"),
        ManifestError(Path("/srv/kb/index/manifest.sqlite"), "is damaged", "run `selfcrag ingest PATH` to rebuild it"),
        UnreadableConversationError("the conversation file is damaged"),
        SettingError("top_k must be a whole number"),
        UserError("the index engine failed; the previous index is unchanged"),
    ],
    ids=type,
)
def test_studio_shows_a_user_errors_message_not_an_internal_error(error: UserError) -> None:
    shown = json.loads(json_dumpb(error))
    assert shown == {"error": type(error).__name__, "message": str(error)}
