"""``python -m selfcrag.cli``."""

from selfcrag.cli import app

app()
