"""The wheel: one top-level import name, the sample knowledge base inside, `selfcrag demo` working from it."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("selfcrag-*.whl")
    return built


def test_the_wheel_installs_one_top_level_name_and_ships_the_sample_kb(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        top_level = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        assert archive.read(top_level).decode().split() == ["selfcrag"]
    assert {name.split("/")[0] for name in names} == {
        "selfcrag",
        next(n for n in names if ".dist-info/" in n).split("/")[0],
    }
    for required in (
        "selfcrag/graph/builder.py",
        "selfcrag/nodes/retrieve.py",
        "selfcrag/prompts/answering.py",
        "selfcrag/sample_kb/zh/退货与退款政策.md",
        "selfcrag/sample_kb/en/aurora-api-guide.md",
    ):
        assert required in names, required


def test_selfcrag_demo_works_from_the_wheel_in_a_fresh_venv_outside_the_checkout(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # The dependencies come from the test environment (no download); selfcrag itself only from the wheel:
    # a path line in a .pth file adds the folder without running its .pth files (the checkout's editable hook).
    (purelib / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFCRAG_", "PYTHON"))}
    where = subprocess.run(
        [python, "-c", "import selfcrag.graph.builder as b; print(b.__file__)"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert where.startswith(str(purelib)) and str(ROOT) not in where

    run = subprocess.run(
        [venv / "bin" / "selfcrag", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    assert "indexed 6 sample documents" in run.stdout
    assert "[1]" in run.stdout and "退货与退款政策.md" in run.stdout
