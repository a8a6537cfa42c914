"""Charts and images as their own modality: vector charts from drawings, captions, HTML <img>, figure OCR.

The real fixture is pages 20-21 of Verizon's 2021 10-K (public SEC filing): five column charts under one title
("Highlights of Our 2021 Financial Results") and two segment donuts, whose labels used to leak into text chunks.
"""

from pathlib import Path

import pymupdf
import pytest

from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.core import schema
from haystack_fin.core.ingest import ocr as ocr_engine
from haystack_fin.core.ingest.figures import find_vector_charts
from haystack_fin.core.ingest.html import parse_html_filing
from haystack_fin.core.ingest.layout import Element, ImageData
from haystack_fin.core.ingest.pdf import _raw_lines, parse_pdf_filing
from haystack_fin.core.ingest.pdf_tables import value_lines

FIXTURES = Path(__file__).parent.parent / "fixtures"
VERIZON = FIXTURES / "verizon-10k-2021-p20-21-charts.pdf"


@pytest.fixture(scope="module")
def verizon() -> list[Element]:
    return parse_pdf_filing(VERIZON, ocr=False).elements


def _charts(elements: list[Element]) -> list[ImageData]:
    return [e.image for e in elements if e.image is not None and e.image.kind == "chart"]


def test_verizon_column_charts_and_donuts_are_found(verizon: list[Element]) -> None:
    charts = _charts(verizon)
    assert sorted(c.chart for c in charts) == ["column"] * 5 + ["pie"] * 2
    by_title = {c.labels[0]: c for c in charts if c.chart == "column"}
    assert set(by_title) == {
        "Operating Revenues",
        "Operating Income",
        "Net Income",
        "Cash Flows from Operations",
        "Capital Expenditures",
    }
    revenue = by_title["Operating Revenues"]
    assert revenue.labels == ["Operating Revenues", "$133,613", "$128,292", "2021", "2020"]
    # Values in the order of their columns (and of the years under them), not of their heights: 2020's column
    # is the taller one here.
    assert by_title["Cash Flows from Operations"].labels[1:] == ["$39,539", "$41,768", "2021", "2020"]
    assert revenue.caption == "Highlights of Our 2021 Financial Results (dollars in millions)"
    # The panel's other charts take the panel title (none has a caption line of its own).
    assert all(c.caption.startswith("Highlights of Our 2021 Financial Results") for c in by_title.values())
    donuts = sorted((c for c in charts if c.chart == "pie"), key=lambda c: c.caption)
    assert [sorted(d.labels) for d in donuts] == [["24.0%", "68.7%", "7.3%"], ["23.2%", "5.7%", "71.1%"]]
    assert [d.caption for d in donuts] == ["2020", "Revenue by Segment 2021"]


def test_chart_words_leave_the_running_text(verizon: list[Element]) -> None:
    text = "\n".join(e.text for e in verizon if e.kind == "text")
    for label in ("$133,613", "$41,768", "71.1%", "Operating Revenues", "2021 2020 2021"):
        assert label not in text
    # The titles and prose around the charts stay.
    assert "Highlights of Our 2021 Financial Results" in text
    assert "Revenue by Segment" in text and "Verizon Consumer Group" in text
    assert not any(e.kind == "table" for e in verizon)  # the row of value labels is not a table


def test_no_row_like_line_is_left_in_text() -> None:
    """benchmarks/check_chunks.py's value_lines_in_text on the excerpt: 2 lines before charts existed, 0 now."""
    elements = parse_pdf_filing(VERIZON, ocr=False).elements
    with pymupdf.open(VERIZON) as doc:
        for page in doc:
            texts = ["".join(e.text.split()) for e in elements if e.kind == "text" and e.page == page.number + 1]
            for _, line in value_lines(page.get_text("words")):
                assert not any("".join(line.split()) in t for t in texts), line


def test_without_images_the_chart_words_stay_text() -> None:
    elements = parse_pdf_filing(VERIZON, ocr=False, extract_images=False).elements
    assert not any(e.kind == "image" for e in elements)
    assert "$133,613" in " ".join(e.text for e in elements)


def _page_with(draw: str) -> pymupdf.Page:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    if draw == "bars":
        page.insert_text((100, 80), "Revenue by Year", fontsize=10)
        for k, (height, value) in enumerate(((120, "$1,200"), (90, "$900"), (60, "$600"))):
            x = 100 + 60 * k
            page.draw_rect(pymupdf.Rect(x, 220 - height, x + 40, 220), color=None, fill=(0.8, 0.1, 0.1))
            page.insert_text((x + 2, 220 - height - 3), value, fontsize=8)
            page.insert_text((x + 8, 232), str(2021 - k), fontsize=8)
    else:  # a shaded table: bands holding their row's text, empty shaded spacer cells between value columns
        for row in range(6):
            y = 100 + 14 * row
            if row % 2 == 0:
                page.draw_rect(pymupdf.Rect(72, y, 540, y + 12), color=None, fill=(0.85, 0.9, 1.0))
            page.draw_rect(pymupdf.Rect(400, y, 406, y + 12), color=None, fill=(0.6, 0.7, 0.9))
            page.insert_text((74, y + 9), f"Line item {row}", fontsize=8)
            page.insert_text((350, y + 9), f"{100 + row:,}", fontsize=8)
            page.insert_text((450, y + 9), f"{200 + row:,}", fontsize=8)
    return page


def test_synthetic_bar_chart_labels_in_reading_order() -> None:
    page = _page_with("bars")
    lines = _raw_lines(page)
    charts = find_vector_charts(page.get_cdrawings(), lines, tuple(page.rect))
    assert len(charts) == 1 and charts[0].kind == "column"
    # The title set tight above the tallest bar's value label is the chart's too.
    labels = [lines[i].text for i in charts[0].label_indices]
    assert labels == ["Revenue by Year", "$1,200", "$900", "$600", "2021", "2020", "2019"]


def test_shaded_table_is_not_a_chart() -> None:
    page = _page_with("table")
    assert find_vector_charts(page.get_cdrawings(), _raw_lines(page), tuple(page.rect)) == []


def test_image_element_round_trips_through_dict(verizon: list[Element]) -> None:
    chart = next(e for e in verizon if e.image is not None)
    again = Element.from_dict(chart.to_dict())
    assert again == chart and isinstance(again.image, ImageData)
    text = next(e for e in verizon if e.kind == "text")
    assert "image" not in text.to_dict()


def test_splitter_makes_image_chunks_with_bbox_and_provenance() -> None:
    docs = FilingConverter(ocr=False).run(sources=[VERIZON])["documents"]
    result = FilingSplitter(term_stats=False, tag_statements=False).run(documents=docs)
    images = [d for d in result["documents"] if d.meta[schema.MODALITY] == "image"]
    assert len(images) == 7
    for d in images:
        assert set(schema.PROVENANCE_FIELDS) <= d.meta.keys()
        assert d.content.startswith(f"[Chart, page {d.meta[schema.PAGE_NUMBERS][0]}] ")
        assert len(d.meta[schema.BBOX]) == 4 and d.meta[schema.IMAGE]["kind"] == "chart"
    revenue = next(d for d in images if "Operating Revenues" in d.content)
    assert "$133,613 $128,292 2021 2020" in revenue.content
    assert result["filing_nodes"][0].meta[schema.N_CHUNKS_BY_MODALITY]["image"] == 7


_HTML = """<html><body>
<div><img src="logo.jpg" alt="logo.jpg" style="height:45px;width:36px"/></div>
<div><span style="font-weight:700">Company Stock Performance</span></div>
<div>The following graph shows a comparison of five-year cumulative total shareholder return for the Company and
two indexes, assuming $100 was invested at the market close five years ago.</div>
<div><img src="g2.jpg" alt="2218" style="height:450px;width:680px"/></div>
<figure><img src="g3.png" alt="Revenue by segment, fiscal 2024" width="600" height="300"/>
<figcaption>Figure 2. Net sales by reportable segment</figcaption></figure>
<div>Net sales grew in every segment during fiscal 2024, led by the Americas and Europe, as the table below shows.</div>
</body></html>"""


def test_html_images_take_alt_caption_and_paragraph() -> None:
    images = [e.image for e in parse_html_filing("x.html", data=_HTML.encode()).elements if e.image is not None]
    assert len(images) == 2  # the 36x45 px logo is no figure
    graph, figure = images
    assert graph.caption == "Company Stock Performance" and graph.alt == ""  # "2218" says nothing
    assert graph.context.startswith("The following graph shows")
    assert figure.caption == "Figure 2. Net sales by reportable segment"
    assert figure.alt == "Revenue by segment, fiscal 2024"
    assert figure.context.startswith("Net sales grew")  # no paragraph before it: the one after
    assert not parse_html_filing("x.html", data=_HTML.encode(), extract_images=False).elements[0].image


@pytest.mark.integration
def test_raster_chart_text_is_read_by_ocr() -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    with pymupdf.open(FIXTURES / "netflix-10k-2015.pdf") as doc:
        page = doc[15]  # the stock performance graph, a raster image
        box = next(tuple(i["bbox"]) for i in page.get_image_info() if i["bbox"][2] - i["bbox"][0] > 300)
        read = ocr_engine.ocr_figure(page, box, time_budget=ocr_engine.FIGURE_TIME_BUDGET)
    assert "12/31/15" in read.text and "$600.00" in read.text
    assert read.confidence is not None and read.confidence > 0.8
