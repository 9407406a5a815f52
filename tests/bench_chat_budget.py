"""Time one question against a rate-limiting, failing or silent chat endpoint, with the default budget.

Run: ``.venv/bin/python tests/bench_chat_budget.py DATA_DIR`` (an index of the sample knowledge base,
e.g. from ``selfcrag demo``). Prints seconds and requests per scenario; the endpoint is a scripted
server on loopback.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scripted_openai import Reply, ScriptedOpenAIServer  # noqa: E402

from selfcrag import ask  # noqa: E402

SCENARIOS = [
    ("429 Retry-After: 10 on every request", [Reply(status=429, retry_after="10")]),
    ("500 on every request", [Reply(status=500)]),
    ("no answer within request_timeout (60 s)", [Reply('{"retrieve": true}', delay=90)]),
]


def main(data_dir: str) -> None:
    """Print the figures of each scenario."""
    for name, script in SCENARIOS:
        with ScriptedOpenAIServer(script) as server:
            os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = server.url, "bench-key"
            began = time.monotonic()
            result = ask("How long are application logs kept?", data_dir=data_dir)
            offline = sum("fallback" in step for step in result.trace)
            print(
                f"{name}: {time.monotonic() - began:.1f} s, {len(server.requests)} requests, "
                f"{offline} steps offline, answered: {'90 days' in result.answer}",
                flush=True,
            )
    os._exit(0)  # the silent server's handler is still asleep: do not wait for it


if __name__ == "__main__":
    main(sys.argv[1])
