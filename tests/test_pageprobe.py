"""The browser test's checks fail on each defect a reader would meet (no browser needed: the
facts are what :func:`pageprobe.probe` reports for a page)."""

from __future__ import annotations

import pytest
from pageprobe import CHAPTER_MAX, PROVENANCE, contrast, defects, enlarge_defects, layout_defects

SENTENCES = ["954,000 tok/s is physically impossible.", "It is within published results."]


def _good() -> dict:
    return {
        "height": 9_000,
        "title_top": 136,
        "conclusion_bottom": 900,
        "conclusion": "What this chapter concludes 954,000 tok/s is physically impossible. "
        "It is within published results. Certainty: physics bounds only.",
        "text": "A page.",
        "images": [["../_images/ab12.png", "Throughput of each configuration."]],
        "caption_colours": ["rgb(34, 40, 50)"],
        "body_colour": "rgb(34, 40, 50)",
        "background": "rgb(255, 255, 255)",
        "dataframes": 0,
        "toc_width": 272,
        "toc_links": 9,
        "conclusion_top": 200,
        "sections": [["Definitions#", 2000], ["The evidence#", 2600], [PROVENANCE, 9000]],
        "clutter": [["Show the chapter's parameters", 9500], ["Warning", 9300]],
    }


def test_a_good_page_has_no_defect():
    assert defects("p", _good(), SENTENCES) == []


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"text": "x <IPython.core.display.Markdown object> y"}, "object repr"),
        ({"text": "<foo.Bar object at 0x7f00aa>"}, "object repr"),
        ({"dataframes": 1}, "raw DataFrame"),
        ({"height": CHAPTER_MAX + 1}, f"over {CHAPTER_MAX:,}"),
        ({"conclusion_bottom": 1_400}, "below the title"),
        ({"conclusion_bottom": None, "conclusion": None}, "no conclusion"),
        ({"conclusion": "954,000 tok/s is physically possible."}, "not in the first screen"),
        ({"images": [["../_images/ab12.png", "../_images/ab12.png"]]}, "alt text"),
        ({"images": [["a.png", "figure.png"]]}, "alt text"),
        ({"caption_colours": ["rgb(150, 150, 150)"]}, "below body-text contrast"),
        ({"toc_links": 0}, "right-hand contents"),
        ({"clutter": [["Show the chapter's parameters", 1500]]}, "before the evidence"),
        ({"clutter": [["As published: 954,000 tok/s", 2300]]}, "before the evidence"),
        ({"clutter": [["Warning The trace behind", 2300]]}, "before the evidence"),
        (
            {"sections": [["The evidence#", 1000], ["Definitions#", 2000], [PROVENANCE, 9000]]},
            "definitions come after",
        ),
        ({"conclusion_top": 2500}, "conclusion does not come before"),
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


def _layout() -> dict:
    return {
        "view_width": 400,
        "scroll_width": 400,
        "column_width": 352,
        "overflowing": [],
        "figures": [["../_images/a.png", 352, 1303]],
    }


def _png(src: str) -> dict:
    return {"width": 1303, "min_pt": 10.0, "dpi": 200.0}  # 10 pt at 200 dpi: 27.8 px natural


def test_a_page_that_fits_has_no_layout_defect():
    assert layout_defects("p", _layout(), 400, _png) == []  # 27.8 x 352 / 1303 = 7.5 px


@pytest.mark.parametrize(
    ("change", "width", "png", "words"),
    [
        ({"scroll_width": 488, "overflowing": ["TH. 488px: This run"]}, 400, _png, "sideways"),
        ({"figures": [["a.png", 211, 1303]]}, 400, _png, "px in a 352 px column"),
        ({}, 400, lambda s: {"width": 1303, "min_pt": 8.0, "dpi": 200.0}, "under 7"),
        (
            {"column_width": 768, "figures": [["a.png", 768, 1303]]},
            1400,
            lambda s: {"width": 1303, "min_pt": 6.0, "dpi": 200.0},  # 9.8 px
            "under 11",
        ),
        ({}, 400, lambda s: {"width": 1303}, "does not say its smallest font"),
    ],
)
def test_each_layout_defect_is_reported(change, width, png, words):
    found = layout_defects("p", {**_layout(), **change}, width, png)
    assert any(words in f for f in found), found


def test_a_figure_without_a_link_to_its_file_is_reported(tmp_path):
    """enlarge_defects: a figure must sit in a link to its own image file in the build."""
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "a.png").write_bytes(b"png")
    (tmp_path / "_images" / "b.png").write_bytes(b"png")
    page = "notebooks/x.html"
    src = "../_images/a.png"
    ok = {"figure_links": [[src, "../_images/a.png"]]}
    assert enlarge_defects(page, ok, tmp_path) == []
    cases = {
        None: "is not inside a link",
        "../_images/gone.png": "not a file of the build",
        "../../outside.png": "not a file of the build",
        "../_images/b.png": "not its own image",
    }
    for href, words in cases.items():
        (got,) = enlarge_defects(page, {"figure_links": [[src, href]]}, tmp_path)
        assert words in got and src in got
