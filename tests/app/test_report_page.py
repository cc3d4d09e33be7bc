"""The report's page: the verdict and the headline figure first, then the table of contents and the
sections; figures at print quality (PNG at 150 dpi plus SVG); checked in a real headless browser
where one is installed."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from test_report_baselines import CODED, PUBLISHED
from test_report_summary import models

from biasmonkey.harness_ext.app import report

VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(report, "discover", lambda paths, names=None, left_out=None: models())
        mp.setattr(report, "write_leaderboard", lambda *args, **kwargs: [])
        report.write_report(["x"], out, baselines=PUBLISHED, topics_file=CODED)
    return out


def png_dpi(path: Path) -> float:
    """The resolution a PNG declares (its pHYs chunk, pixels per metre), in dots per inch."""
    data = path.read_bytes()
    at = data.index(b"pHYs")
    x, _, unit = struct.unpack(">IIB", data[at + 4 : at + 13])
    assert unit == 1  # metres
    return x * 0.0254


def test_the_verdict_and_headline_come_first(written: Path) -> None:
    md = (written / "report.md").read_text()
    contents = md.index("**Contents**")
    first_screen = md[:contents]
    assert first_screen.startswith("# biasmonkey report: m1, m2\n")
    assert "How human-like are each model's biases" in first_screen
    assert "- **m1**: Survey response biases (sampled): human-likeness score +1" in first_screen
    assert "the paper's 1 model score +1 to +1 (0 below it, 0 above)" in first_screen  # llama2-7b: +1
    assert "![Headline: effect size per model" in first_screen and "(figures/headline.png)" in first_screen
    assert "Summary per model" not in first_screen and "|---|" not in first_screen  # no table before the contents
    # the table of contents links every section, in order
    titles = re.findall(r"^## (.+)$", md, flags=re.M)
    links = re.findall(r"^- \[(.+)\]\(#([a-z0-9-]+)\)$", md[contents:].split("\n\n<a id=")[0], flags=re.M)
    assert (
        [t for t, _ in links]
        == titles
        == [
            "Summary",
            "Survey response biases (Tjuatja et al., TACL 2024)",
            "Yes-no bias (Bhatt & Ivanova, CogSci 2025)",
            "Cognitive biases (Malberg et al., 2025)",
            "Multiple comparisons",
            "Leaderboard files",
            "Inputs",
        ]
    )
    assert all(f'<a id="{anchor}"></a>' in md for _, anchor in links)
    html = (written / "report.html").read_text()
    assert html.index('<figure id="headline">') < html.index('<nav id="contents">') < html.index("<table")
    assert all(f'<section id="{anchor}">' in html and f'href="#{anchor}"' in html for _, anchor in links)


def test_figures_at_print_quality(written: Path) -> None:
    pngs = sorted((written / "figures").glob("*.png"))
    assert {"headline.png", "bias_grid_m1.png", "cognitive_heatmap.png", "yesno.png"} <= {p.name for p in pngs}
    for png in pngs:
        assert png_dpi(png) == pytest.approx(150, abs=0.5), png.name
        assert png.with_suffix(".svg").read_text().lstrip().startswith("<?xml"), png.name


def test_headline_panels_follow_the_families(written: Path) -> None:
    """One panel per family present (response bias, yes-no, cognitive), each with its colour bar:
    the SVG holds the panels' titles."""
    svg = (written / "figures" / "headline.svg").read_text()
    for title in ("Survey response biases", "Yes-no bias", "Cognitive biases"):
        assert title in svg
    assert "Answer position" not in svg  # no answer-position results


def test_headline_is_in_the_first_screen_of_a_browser(written: Path) -> None:
    playwright = pytest.importorskip(
        "playwright.sync_api", reason="no headless browser here (pip install playwright; playwright install chromium)"
    )
    with playwright.sync_playwright() as p:
        try:
            browser = p.chromium.launch()
        except Exception as err:  # the package without its browser download
            pytest.skip(f"playwright has no Chromium here: {err}".splitlines()[0])
        page = browser.new_page(viewport=VIEWPORT)
        page.goto((written / "report.html").as_uri())
        box = page.locator("#headline img").bounding_box()
        browser.close()
    assert box is not None and box["height"] > 100
    assert box["y"] + box["height"] <= VIEWPORT["height"]
