"""One question's budget of chat-model time and failures, shared by all its steps.

A question gets a deadline and a circuit breaker: once the endpoint has
failed ``failure_limit`` times in this question, or the deadline has passed,
every remaining step answers offline at once instead of waiting out its own
retries. Waits (backoff, ``Retry-After``) and request timeouts are cut to
what is left of the deadline.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from selfcrag.llm.errors import BudgetSpentError


@dataclass
class CallBudget:
    """What is left of a question's chat budget.

    Attributes:
        deadline: Wall-clock time (``time.time()``) after which no call starts.
        failure_limit: Failed calls after which the breaker opens.
        calls: Calls made so far in this question.
        failures: Calls that failed (faults, timeouts) so far in this question.
    """

    deadline: float
    failure_limit: int
    calls: int = 0
    failures: int = 0

    def remaining(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(self.deadline - time.time(), 0.0)

    def spent_reason(self) -> str | None:
        """Why no further call may start, or None while the budget lasts."""
        if self.failures >= self.failure_limit:
            return f"the chat endpoint failed {self.failures} times in this question; answering offline"
        if self.remaining() <= 0:
            return "the question's time for the chat model ran out; answering offline"
        return None

    def start_call(self) -> float:
        """Count a call about to start.

        Returns:
            The longest the call may take (seconds, rounded up).

        Raises:
            BudgetSpentError: The budget is spent.
        """
        reason = self.spent_reason()
        if reason is not None:
            raise BudgetSpentError(reason)
        self.calls += 1
        return float(max(math.ceil(self.remaining()), 1))

    def failed(self) -> None:
        """Count a call that failed."""
        self.failures += 1

    def allows_wait(self, seconds: float) -> bool:
        """Tell whether a wait of this long still leaves time for another call."""
        return self.spent_reason() is None and seconds < self.remaining()
