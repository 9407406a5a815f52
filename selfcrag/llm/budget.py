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
from collections.abc import Callable
from dataclasses import dataclass, field

from selfcrag.llm.errors import BudgetSpentError

# Said when the deadline is spent: chat_step and the notes recognise it by this.
TIME_RAN_OUT = "the question's time for the chat model ran out"


class Clock:
    """The time a question's budget is measured in, and the waits between retries.

    The wall clock by default. A test installs its own (``budget.CLOCK``), whose waits pass at once: what a
    deadline allows then depends on the waits asked for, never on how fast a busy machine runs.
    """

    def now(self) -> float:
        """Seconds since the epoch."""
        return time.time()

    def sleep(self, seconds: float) -> None:
        """Wait (between retries)."""
        time.sleep(seconds)


CLOCK = Clock()
"""The clock in use (replaced only by tests)."""


def now() -> float:
    """The time on :data:`CLOCK`."""
    return CLOCK.now()


def wait(seconds: float) -> None:
    """Wait on :data:`CLOCK`."""
    CLOCK.sleep(seconds)


@dataclass
class CallBudget:
    """What is left of a question's chat budget.

    Attributes:
        deadline: Time on the clock (:func:`now`) after which no call starts.
        failure_limit: Failed calls after which the breaker opens.
        calls: Calls made so far in this question.
        failures: Calls that failed (faults, timeouts) so far in this question.
        clock: What tells the time (:func:`now`; a test gives its own, so no verdict waits on a real clock).
    """

    deadline: float
    failure_limit: int
    calls: int = 0
    failures: int = 0
    clock: Callable[[], float] = field(default=now, repr=False, compare=False)

    def remaining(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(self.deadline - self.clock(), 0.0)

    def spent_reason(self) -> str | None:
        """Why no further call may start, or None while the budget lasts."""
        if self.failures >= self.failure_limit:
            return f"the chat endpoint failed {self.failures} times in this question; answering offline"
        if self.remaining() <= 0:
            return f"{TIME_RAN_OUT}; answering offline"
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
