"""What a chat step raises when the model answered but nothing it said can be used."""


class UnusableReplyError(Exception):
    """The chat model replied, but no reply could be used (empty, cut off, unparsable, wrong language)."""


class UnparsableReplyError(UnusableReplyError):
    """The chat model's replies did not parse into the expected structure."""


class MalformedReplyError(UnusableReplyError):
    """The server answered 200 with something that is not a chat completion (an HTML page, an empty stream)."""


class BudgetSpentError(Exception):
    """The question's chat budget is spent (its deadline passed, or the endpoint failed too often): answer offline."""
