"""Errors a user can cause, shown as one line without a traceback."""


class UserError(ValueError):
    """A problem the user can fix: the message says what to do.

    A ``ValueError``, so that the LangGraph API server (``selfcrag studio``, ``langgraph dev``) shows its message
    to the run's caller: it passes on the messages of ValueErrors and replaces those of other errors with "An
    internal error occurred". Code that catches ValueError around a call that may raise a UserError lets the
    UserError through first.
    """


class NoIndexError(UserError):
    """Nothing has been ingested into the data directory yet."""


class EmbeddingServiceError(UserError):
    """The configured embedding endpoint failed after its retries."""


class SettingError(UserError):
    """A setting is refused: a knob of a run's context, or the environment variable it came from."""
