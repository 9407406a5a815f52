"""``python -m selfcrag.cli``."""

from selfcrag.cli import run

run()
