"""The browser test's checks fail on each defect a reader would meet (no browser needed: the
facts are what :func:`pageprobe.probe` reports for a page)."""

from __future__ import annotations

import pytest
from pageprobe import contrast, defects

SENTENCES = ["954,000 tok/s is physically impossible.", "It is within published results."]


def _good() -> dict:
    return {
        "height": 9_000,
        "title_top": 136,
        "conclusion_bottom": 900,
        "conclusion": "What this chapter concludes 954,000 tok/s is physically impossible. "
        "It is within published results. Strength of evidence: physics only.",
        "text": "A page.",
        "images": [["../_images/ab12.png", "Throughput of each configuration."]],
        "caption_colours": ["rgb(34, 40, 50)"],
        "body_colour": "rgb(34, 40, 50)",
        "background": "rgb(255, 255, 255)",
        "dataframes": 0,
        "toc_width": 272,
        "toc_links": 9,
    }


def test_a_good_page_has_no_defect():
    assert defects("p", _good(), SENTENCES) == []


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"text": "x <IPython.core.display.Markdown object> y"}, "object repr"),
        ({"text": "<foo.Bar object at 0x7f00aa>"}, "object repr"),
        ({"dataframes": 1}, "raw DataFrame"),
        ({"height": 12_001}, "over 12,000"),
        ({"conclusion_bottom": 1_400}, "below the title"),
        ({"conclusion_bottom": None, "conclusion": None}, "no conclusion"),
        ({"conclusion": "954,000 tok/s is physically possible."}, "not in the first screen"),
        ({"images": [["../_images/ab12.png", "../_images/ab12.png"]]}, "alt text"),
        ({"images": [["a.png", "figure.png"]]}, "alt text"),
        ({"caption_colours": ["rgb(150, 150, 150)"]}, "below body-text contrast"),
        ({"toc_links": 0}, "right-hand contents"),
    ],
)
def test_each_defect_is_reported(change, words):
    found = defects("p", {**_good(), **change}, SENTENCES)
    assert len(found) >= 1 and any(words in f for f in found), found


def test_the_landing_page_limit_is_its_own():
    assert defects("intro", {**_good(), "height": 2_600}, max_height=2_500)
    assert not defects("intro", {**_good(), "height": 2_400}, max_height=2_500)


def test_contrast_is_wcag():
    assert contrast("rgb(0, 0, 0)", "rgb(255, 255, 255)") == pytest.approx(21.0)
    assert contrast("rgb(119, 119, 119)", "rgb(255, 255, 255)") == pytest.approx(4.48, abs=0.01)
