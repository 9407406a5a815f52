"""Write harbour-light.pdf, the PDF that tests/test_pdf_reading.py reads (run it with fpdf2 installed).

fpdf2 lays the pages out as a PDF writer does: a running header and footer drawn on every page,
the outline (bookmarks) from ``start_section``, a table of contents with dot leaders, and page
labels (roman for the front matter, arabic from the first chapter). Lines are set one by one, so
that a word is hyphenated at a line end where the test expects it.

    python tests/data/pdf-manual/make_manual.py
"""

from __future__ import annotations

from pathlib import Path

from fpdf import FPDF
from fpdf.outline import OutlineSection

TITLE = "Harbour Light Keeper's Manual"

# (outline level, heading) or a paragraph as the lines it is set in; "PAGE" starts a new page.
BODY: list[tuple[int, str] | list[str] | str] = [
    (0, "1 Introduction"),
    [
        "This manual describes how the keepers of the Harbour Light at Port Ellis run the station.",
        "The light was first lit in 1858 and has been automated since 1994, but a keeper still",
        "visits the tower every day to check the lamp, the lens and the fog signal.",
    ],
    [
        "The station stands on the northern breakwater, 400 metres from the harbour office.",
        "Keepers reach it on foot along the breakwater path, which is closed when waves break",
        "over the wall; on those days the keeper on duty watches the light from the harbour",
        "office and writes in the log that the visit was made from the shore.",
    ],
    [
        "Each keeper works a fortnight on duty and a fortnight off. The duty keeper carries the",
        "station phone, answers calls from the harbour master and from the coastguard, and keeps",
        "the log book up to date. A keeper who falls ill hands the phone to the relief keeper,",
        "whose name and number are pinned inside the door of the lamp room.",
    ],
    [
        "The station also keeps a small museum in the old oil store. It opens on Saturday",
        "afternoons from May to September, and the keeper on duty unlocks it at two o'clock and",
        "locks it again at five. Visitors may climb the tower only with a keeper, in groups of no",
        "more than six, and never in a wind stronger than force seven. The tickets are sold at",
    ],
    "PAGE",
    [
        "the harbour office and the money is counted there on Monday morning.",
    ],
    (0, "2 Lamp and lens care"),
    (1, "2.1 Cleaning the lens"),
    [
        "The lens is cleaned every Monday with distilled water and a soft chamois leather, never",
        "with a cloth that has touched oil. The cleaning is recorded in the docu-",
        "mentation kept in the lamp room, with the time and the keeper's initials.",
    ],
    [
        "Cracked prisms are reported to the harbour engineer the same day. The well-",
        "known rule of the station is that nobody touches a cracked prism with bare hands:",
        "the glass is old, heavy and sharp, and a well-known accident in 1931 cost a keeper",
        "two fingers.",
    ],
    (1, "2.2 Changing the lamp"),
    [
        "The lamp is an LED unit of 120 watts that lasts about six years. A spare unit is kept",
        "in the grey cabinet at the foot of the stairs. To change it, switch the light to the",
        "standby lamp at the panel, wait ten minutes for the unit to cool, then lift it out by",
        "its two handles.",
    ],
    "PAGE",
    [
        "Write the serial numbers of the old and the new unit in the log, and send the old unit",
        "to the harbour engineer in its original box.",
    ],
    (0, "3 Night watch"),
    [
        "When the automatic monitor reports a fault at night, the duty keeper must reach the",
        "tower within forty minutes and stay there until the light is working again.",
        "If the main lamp and the standby lamp both fail, the keeper lights the emergency",
        "lantern on the gallery and calls the coastguard on channel 16.",
    ],
    (1, "3.1 Logging the weather"),
    [
        "Every night at midnight the keeper writes the wind, the sea state and the visibility",
        "in the weather log. Fog is logged when the far buoy cannot be seen, and the fog signal",
        "is then sounded twice a minute until the buoy can be seen again.",
    ],
    "PAGE",
    (1, "3.2 Handing over"),
    [
        "At the end of a fortnight the duty keeper meets the relief keeper at the harbour",
        "office at nine in the morning. They read the log together, count the spare lamps and",
        "the fuel for the generator, and both sign the handover page before the keys change",
        "hands.",
    ],
    [
        "Anything that was reported to the harbour engineer and not yet mended is written on",
        "the handover page again, so that the relief keeper knows what to chase.",
    ],
    (0, "4 Contacts"),
    [
        "The harbour office answers on 01632 960 412 from eight in the morning to six in the",
        "evening. Outside those hours, call the coastguard on 01632 960 999.",
    ],
]


class Manual(FPDF):
    """The manual: a running header and footer on every page after the title page."""

    def header(self) -> None:
        if self.page_no() > 1:
            self.set_font("Helvetica", size=9)
            self.cell(0, 8, TITLE, new_x="LMARGIN", new_y="NEXT")
            self.ln(4)

    def footer(self) -> None:
        if self.page_no() > 1:
            self.set_y(-15)
            self.set_font("Helvetica", size=9)
            self.cell(0, 8, f"Page {self.get_page_label()}", align="C")


def render_contents(pdf: FPDF, sections: list[OutlineSection]) -> None:
    """The table of contents: each section, a dot leader and its printed page number."""
    pdf.set_font("Helvetica", "B", 14)
    pdf.cell(0, 10, "Contents", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    for section in sections:
        indent = 8 * section.level
        label = section.page_number - 2  # chapters are numbered from the third page
        pdf.set_x(pdf.l_margin + indent)
        pdf.cell(150 - indent, 7, f"{section.name} " + ". " * 30)
        pdf.cell(0, 7, str(label), align="R", new_x="LMARGIN", new_y="NEXT")


def main() -> None:
    """Write the PDF next to this script."""
    pdf = Manual(format=(148, 210))
    pdf.set_title(TITLE)
    pdf.set_author("Port Ellis Harbour Trust")
    pdf.set_margins(15, 12, 15)
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_page_label("r")
    pdf.set_font("Helvetica", "B", 20)
    pdf.ln(60)
    pdf.cell(0, 12, TITLE, align="C", new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=12)
    pdf.cell(0, 8, "Port Ellis Harbour Trust, 2024 edition", align="C", new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    pdf.insert_toc_placeholder(render_contents, reset_page_indices=False)  # and a new page after it
    pdf.set_page_label("D", label_start=1)
    for item in BODY:
        if item == "PAGE":
            pdf.add_page()
        elif isinstance(item, tuple):
            level, heading = item
            pdf.ln(3)
            pdf.set_font("Helvetica", "B", 13 - 2 * level)
            pdf.start_section(heading, level=level)
            pdf.cell(0, 8, heading, new_x="LMARGIN", new_y="NEXT")
        else:
            pdf.set_font("Helvetica", size=8)
            for line in item:
                pdf.cell(0, 4.6, line, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
    pdf.output(str(Path(__file__).with_name("harbour-light.pdf")))


if __name__ == "__main__":
    main()
