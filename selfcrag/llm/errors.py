"""What a chat step raises when the model answered but nothing it said can be used."""


class UnusableReplyError(Exception):
    """The chat model replied, but no reply could be used (empty, cut off, unparsable, wrong language)."""


class UnparsableReplyError(UnusableReplyError):
    """The chat model's replies did not parse into the expected structure."""


class MalformedReplyError(UnusableReplyError):
    """The server answered 200 with something that is not a chat completion (an HTML page, an empty stream)."""


class DroppedStreamError(UnusableReplyError):
    """A streamed reply ended before its first token: a connection closed early, or a body that held no chunk.

    Transient as a dropped connection is: retried with backoff, and counted against the question's circuit breaker.
    """


class BudgetSpentError(Exception):
    """The question's chat budget is spent (its deadline passed, or the endpoint failed too often): answer offline."""


class CutOffReplyError(UnusableReplyError):
    """The reply was cut off by its step's token limit, or started repeating itself: it is not used.

    Asking again would most likely end the same way (the same prompt, the same limit), so the step falls back at
    once instead.

    Args:
        reason: Why, in one line.
        token_limit: The step's ``max_tokens`` when the reply reached it (None: it repeated itself).
    """

    def __init__(self, reason: str, token_limit: int | None = None) -> None:
        super().__init__(reason)
        self.token_limit = token_limit
