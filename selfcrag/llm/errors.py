"""What a chat step raises when the model answered but nothing it said can be used."""


class UnusableReplyError(Exception):
    """The chat model replied, but no reply could be used (empty, cut off, unparsable, wrong language)."""


class UnparsableReplyError(UnusableReplyError):
    """The chat model's replies did not parse into the expected structure."""


class BudgetSpentError(Exception):
    """The question's chat budget is spent (its deadline passed, or the endpoint failed too often): answer offline."""
