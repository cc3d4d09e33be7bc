"""Render the first screen of a biasmonkey report (its verdict and headline figure, up to the table
of contents) to a PNG for the README, with MuPDF's HTML engine (no browser needed):

    make docs-images REPORT=results/report     # installs PyMuPDF into a throwaway environment

Usage: python first_screen.py REPORT_DIR OUT.png"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import pymupdf

PAGE = pymupdf.Rect(0, 0, 1000, 760)  # points: one screen
MARGIN = (30, 20, -30, -20)
FIGURE_WIDTH = 540  # points


def first_screen(report: Path, out: Path) -> Path:
    page = (report / "report.html").read_text()
    head = page.split('<nav id="contents">')[0] + "</body></html>"
    # MuPDF reads images from an archive, not from data URIs: point the headline at its PNG
    head = re.sub(r'src="data:image/png;base64,[^"]+"', f'src="headline.png" width="{FIGURE_WIDTH}"', head)
    story = pymupdf.Story(html=head, archive=pymupdf.Archive(str(report / "figures")))
    with tempfile.TemporaryDirectory() as tmp:
        pdf = Path(tmp) / "screen.pdf"
        writer = pymupdf.DocumentWriter(str(pdf))
        device = writer.begin_page(PAGE)
        story.place(PAGE + MARGIN)
        story.draw(device)
        writer.end_page()
        writer.close()
        with pymupdf.open(str(pdf)) as doc:
            doc[0].get_pixmap(dpi=110).save(str(out))
    return out


if __name__ == "__main__":
    print(first_screen(Path(sys.argv[1]), Path(sys.argv[2])))
