"""The readers of ``selfcrag.files`` stand below the loader that dispatches to them, never importing it back.

``loaders`` imports a reader when a file of its format is read; a reader that imported ``loaders`` (for
``Place``, a size formatter or a bound) made a cycle that only worked because of the order things were imported
in. What readers share lives in the modules below them: ``places``, ``containers``, ``outline``, ``tables``.
"""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import selfcrag.files

_IMPORT_AND_TELL = (
    "import importlib, sys\n"
    "for name in sys.argv[1:]:\n"
    "    importlib.import_module(name)\n"
    "print('selfcrag.files.loaders' in sys.modules)\n"
)


def test_no_reader_module_imports_the_loader() -> None:
    readers = [
        f"selfcrag.files.{module.name}"
        for module in pkgutil.iter_modules(selfcrag.files.__path__)
        if module.name != "loaders"
    ]
    assert "selfcrag.files.pdf" in readers and "selfcrag.files.places" in readers
    # A fresh interpreter: this one has imported the loader already.
    run = subprocess.run(
        [sys.executable, "-c", _IMPORT_AND_TELL, *readers], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "False"  # imported by none of them
