"""Errors a user can cause, shown as one line without a traceback."""


class UserError(Exception):
    """A problem the user can fix: the message says what to do."""


class NoIndexError(UserError):
    """Nothing has been ingested into the data directory yet."""


class EmbeddingServiceError(UserError):
    """The configured embedding endpoint failed after its retries."""
