"""An RTF document keeps its headings: a sentence's citation names its section, not the file alone.

Issue 34: striprtf, which reads RTF's text, drops the paragraph styles, so every RTF sentence stood under no
heading. The documents here are written by the test as Word writes RTF (a stylesheet naming ``heading 1`` and
``heading 2`` styles, ``\\sN`` and ``\\outlinelevelN`` on the paragraphs, non-ASCII text as ``\\uN`` escapes),
in English and Chinese, ingested by the real CLI and asked about with ``selfcrag ask --json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_runner import selfcrag

from selfcrag.files.loaders import LoadedFile, read_document

# Word's stylesheet: Normal (no \s0), two heading styles with outline levels, a character style, a body style.
WORD_STYLESHEET = (
    r"{\stylesheet{\ql \li0\ri0\widctlpar\wrapdefault\aspalpha\aspnum\faauto\adjustright\rin0\lin0\itap0 "
    r"\rtlch\fcs1 \af0\afs24 \ltrch\fcs0 \fs24\lang1033\langfe2052 \snext0 \sqformat \spriority0 Normal;}"
    r"{\s1\ql \li0\ri0\sb240\sa60\keepn\widctlpar\outlinelevel0\adjustright\rin0\lin0\itap0 \rtlch\fcs1 "
    r"\ab\af0\afs32 \ltrch\fcs0 \b\fs32\kerning32 \sbasedon0 \snext0 \slink15 \sqformat \spriority9 heading 1;}"
    r"{\s2\ql \li0\ri0\sb240\sa60\keepn\widctlpar\outlinelevel1\adjustright\rin0\lin0\itap0 \rtlch\fcs1 "
    r"\ab\ai\af0\afs28 \ltrch\fcs0 \b\i\fs28 \sbasedon0 \snext0 \slink16 \sqformat \spriority9 heading 2;}"
    r"{\*\cs10 \additive \ssemihidden \sunhideused \spriority1 Default Paragraph Font;}"
    r"{\s15\ql \li0\ri0\widctlpar\rin0\lin0\itap0 \fs24 \sbasedon0 \snext15 \sqformat Body Text;}}"
)
FIRE_PROCEDURE = [
    ("heading 1", "Fire evacuation procedure"),
    ("heading 2", "Raising the alarm"),
    ("body", "Break the glass of the nearest red call point and leave by the closest exit."),
    ("heading 2", "Assembly point"),
    ("body", "Everyone meets at the car park behind Building C, where the wardens take the roll."),
    ("heading 2", "疏散集合地点"),
    ("body", "疏散后请到 C 栋后面的停车场集合，由楼层消防员清点人数。"),
]


def escaped(text: str) -> str:
    """Text as Word writes it in RTF: ASCII as it is, anything else a ``\\uN`` escape (signed) with a ``?``."""
    return "".join(c if ord(c) < 128 else f"\\u{ord(c) if ord(c) < 32768 else ord(c) - 65536}?" for c in text)


def word_paragraph(style: str, text: str) -> str:
    """One paragraph as Word writes it: its properties after ``\\pard\\plain``, its runs in groups, ``\\par`` last."""
    properties = {
        "heading 1": r"\s1\ql \li0\ri0\sb240\sa60\keepn\widctlpar\outlinelevel0\rin0\lin0\itap0 \b\fs32 ",
        "heading 2": r"\s2\ql \li0\ri0\sb240\sa60\keepn\widctlpar\outlinelevel1\rin0\lin0\itap0 \b\i\fs28 ",
        "body": r"\s15\ql \li0\ri0\widctlpar\rin0\lin0\itap0 \fs24 ",
    }[style]
    return (
        rf"\pard\plain \ltrpar{properties}{{\rtlch\fcs1 \af0 \ltrch\fcs0 \lang1033\langfe2052 {escaped(text)}}}"
        r"{\rtlch\fcs1 \af0 \ltrch\fcs0 \par }" + "\n"
    )


def word_rtf(paragraphs: list[tuple[str, str]], stylesheet: str = WORD_STYLESHEET) -> bytes:
    """An RTF document as Word saves one."""
    return (
        r"{\rtf1\adeflang1025\ansi\ansicpg1252\uc1\adeff0\deff0\stshfdbch31505\deflang1033\deflangfe2052"
        "\n"
        r"{\fonttbl{\f0\froman\fcharset0\fprq2 Times New Roman;}{\f13\fbidi \fnil\fcharset134\fprq2 SimSun;}}"
        "\n"
        r"{\colortbl;\red0\green0\blue0;}"
        "\n" + stylesheet + "\n"
        r"{\info{\title Fire evacuation procedure}{\author Facilities}}"
        "\n"
        r"\paperw11906\paperh16838\margl1800\margr1800\margt1440\margb1440\sectd"
        "\n" + "".join(word_paragraph(style, text) for style, text in paragraphs) + "}\n"
    ).encode("ascii")


def loaded_text(path: Path) -> str:
    result = read_document(path)
    assert isinstance(result, LoadedFile), result
    return result.text


@pytest.fixture(scope="module")
def fire_kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding Word's RTF of a fire procedure, ingested by ``selfcrag ingest``; the folder it ran in."""
    root = tmp_path_factory.mktemp("rtf")
    (root / "docs").mkdir()
    (root / "docs" / "fire-procedure.rtf").write_bytes(word_rtf(FIRE_PROCEDURE))
    run = selfcrag("ingest", "docs", "--data-dir", "index", cwd=root)
    assert run.returncode == 0, run.stderr
    return root


def cited(root: Path, question: str, words: str) -> dict:
    """The citation of ``ask --json`` (offline) whose quote holds ``words``."""
    run = selfcrag("ask", question, "--json", "--data-dir", "index", cwd=root)
    assert run.returncode in (0, 4), run.stderr  # 4: offline, the closest evidence (cited all the same)
    citations = json.loads(run.stdout)["citations"]
    found = [c for c in citations if words in c["quote"]]
    assert found, [(c["section"], c["quote"]) for c in citations]
    return found[0]


def test_an_rtf_answer_is_cited_with_its_heading_style_section(fire_kb: Path) -> None:
    citation = cited(fire_kb, "Where do we meet after leaving the building for a fire?", "Building C")
    assert citation["path"] == "fire-procedure.rtf"
    assert citation["section"] == ["Fire evacuation procedure", "Assembly point"]


def test_a_chinese_rtf_answer_is_cited_with_its_section(fire_kb: Path) -> None:
    citation = cited(fire_kb, "发生火灾疏散以后去哪里集合？", "停车场")
    assert citation["section"] == ["Fire evacuation procedure", "疏散集合地点"]


def test_rtf_heading_styles_are_found_by_their_stylesheet_names(tmp_path: Path) -> None:
    # No outline level anywhere: the style's name says it is a heading ("标题 2" as WPS writes it, in GBK).
    stylesheet = (
        r"{\stylesheet{\snext0 Normal;}{\s1\sbasedon0\snext0 heading 1;}"
        r"{\s2\sbasedon0\snext0 \'b1\'ea\'cc\'e2 2;}{\s15\sbasedon0\snext15 Body Text;}}"
    )
    rtf = word_rtf(FIRE_PROCEDURE, stylesheet).replace(rb"\outlinelevel0", b"").replace(rb"\outlinelevel1", b"")
    path = tmp_path / "fire.rtf"
    path.write_bytes(rtf.replace(rb"\ansicpg1252", rb"\ansicpg936"))
    text = loaded_text(path)
    assert text.startswith("# Fire evacuation procedure\n\n## Raising the alarm\n\nBreak the glass"), text
    assert "## 疏散集合地点\n\n疏散后请到 C 栋后面的停车场集合" in text


def test_an_rtf_paragraph_with_an_outline_level_of_its_own_is_a_heading(tmp_path: Path) -> None:
    path = tmp_path / "plain.rtf"
    path.write_bytes(
        rb"{\rtf1\ansi\deff0{\fonttbl{\f0 Arial;}}\pard\outlinelevel0 Kettle care\par"
        rb"\pard Descale the kettle every month.\par}"
    )
    assert loaded_text(path) == "# Kettle care\n\nDescale the kettle every month."


def test_rtf_body_text_after_a_heading_stays_text(tmp_path: Path) -> None:
    # \pard ends the heading's properties: the paragraphs after it are no headings.
    path = tmp_path / "fire.rtf"
    path.write_bytes(word_rtf(FIRE_PROCEDURE))
    lines = loaded_text(path).split("\n\n")
    assert [line for line in lines if line.startswith("#")] == [
        "# Fire evacuation procedure",
        "## Raising the alarm",
        "## Assembly point",
        "## 疏散集合地点",
    ]
    assert lines[-1] == "疏散后请到 C 栋后面的停车场集合，由楼层消防员清点人数。"  # the mark left no trace


def test_rtf_groups_nested_past_the_bound_are_read_without_error(tmp_path: Path) -> None:
    # 300,000 nested groups: the heading pass keeps a bounded stack (no recursion), and reads the text.
    depth = 300_000
    path = tmp_path / "deep.rtf"
    path.write_text(
        r"{\rtf1\ansi{\stylesheet{\s1 heading 1;}}\pard\s1 Deep notes\par\pard "
        + "{" * depth
        + r"The kettle is kept in the shed.\par"
        + "}" * depth
        + "}",
        encoding="ascii",
    )
    text = loaded_text(path)
    assert text.startswith("# Deep notes") and text.endswith("The kettle is kept in the shed.")
