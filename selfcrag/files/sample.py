"""The sample knowledge base shipped inside the package (``selfcrag demo``, ``selfcrag bench``)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def sample_kb() -> Path:
    """Return the folder of the bundled sample documents (Chinese and English).

    Returns:
        The folder, inside the installed package.

    Raises:
        RuntimeError: The package is installed in a form with no folders on disk (a zip).
    """
    folder = files("selfcrag").joinpath("sample_kb")
    if not isinstance(folder, Path):
        raise RuntimeError("the bundled sample_kb is not on disk (selfcrag installed as a zip?)")
    return folder
