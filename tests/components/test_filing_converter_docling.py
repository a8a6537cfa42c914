"""FilingConverter(backend="docling"): the same layout elements through Docling (core/ingest/docling_backend.py).

Docling's HTML backend needs no model, so an EDGAR filing is converted for real and compared with the native
backend. PDF needs Docling's layout models, which are not installed here: only the one-line failure is tested.
"""

from pathlib import Path

import pytest

from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.components.filing_splitter import FilingSplitter
from haystack_fin.core import schema
from haystack_fin.core.ingest import docling_backend
from haystack_fin.core.ingest.docling_backend import DoclingUnavailableError
from haystack_fin.core.ingest.layout import Element

PROVENANCE = (
    schema.FILING_ID,
    schema.COMPANY,
    schema.FORM,
    schema.PERIOD,
    "item",
    "item_title",
    "section_path",
    "page_numbers",
    "modality",
    schema.SOURCE_PATH,
)


class TestFilingConverterDocling:
    def test_init_imports_nothing_and_warm_up_names_the_extra(self, monkeypatch):
        monkeypatch.setattr(docling_backend, "docling_installed", lambda: False)
        converter = FilingConverter(backend="docling")  # no import, no I/O in __init__
        with pytest.raises(DoclingUnavailableError) as raised:
            converter.warm_up()
        assert "pip install haystack-fin[docling]" in str(raised.value) and "\n" not in str(raised.value)
        with pytest.raises(DoclingUnavailableError):  # a run fails once, not once per file
            converter.run(sources=["a.html", "b.html"])

    def test_native_backend_never_needs_docling(self, monkeypatch, fixtures):
        monkeypatch.setattr(docling_backend, "docling_installed", lambda: False)
        converter = FilingConverter()
        converter.warm_up()
        assert converter.run(sources=[fixtures / "aapl-10-q-2025-08-01.html.gz"])["failures"] == []


@pytest.fixture(scope="module")
def aapl_both():
    """The Apple 10-Q fixture converted and split by both backends: (native, docling) x (filing, split result)."""
    pytest.importorskip("docling", reason="the [docling] extra is not installed")
    source = Path(__file__).parents[1] / "fixtures" / "aapl-10-q-2025-08-01.html.gz"
    out = []
    for backend in ("native", "docling"):
        result = FilingConverter(backend=backend).run(sources=[source])
        assert result["failures"] == []
        filing = result["documents"][0]
        out.append((filing, FilingSplitter().run(documents=[filing])))
    return out


@pytest.mark.slow
class TestFilingConverterDoclingHtml:
    def test_items_and_pages_match_the_native_backend(self, aapl_both):
        (native, native_split), (docling, docling_split) = aapl_both
        items, native_items = (
            [(i["item"], i["start_page"], i["end_page"]) for i in split["filing_nodes"][0].meta["items"]]
            for split in (docling_split, native_split)
        )
        assert items == native_items  # every Item, with the same pages (measured equal on 4 EDGAR filings too)
        assert [code for code, _, _ in items][:3] == ["cover", "I-1", "I-2"]
        assert docling.meta[schema.N_PAGES] == native.meta[schema.N_PAGES] == 25
        for key in (schema.COMPANY, schema.FORM, schema.PERIOD, schema.TICKER, schema.FISCAL_YEAR):
            assert docling.meta[key] == native.meta[key]
        assert docling.content.count("\f") == 24

    def test_elements_have_tables_with_cells_and_increasing_pages(self, aapl_both):
        (_, _), (docling, _) = aapl_both
        elements = [Element.from_dict(e) for e in docling.meta[schema.ELEMENTS]]
        pages = [e.page for e in elements]
        assert pages == sorted(pages) and pages[0] == 1 and pages[-1] == 25
        tables = [e for e in elements if e.kind == "table"]
        assert len(tables) == 29
        assert all(e.table.n_cols >= 2 and len(e.table.rows) >= 2 for e in tables)
        # the balance sheet: its row labels and amounts in cells, "$" fragments merged away
        rows = [r for e in tables for r in e.table.rows]
        assert any(r[0] == "Total current assets" and any(c[:1].isdigit() for c in r[1:]) for r in rows)
        assert not any(c == "$" for e in tables for r in e.table.rows for c in r)

    def test_chunks_keep_provenance(self, aapl_both):
        (_, native_split), (_, docling_split) = aapl_both
        chunks = docling_split["documents"]
        assert abs(len(chunks) - len(native_split["documents"])) <= 0.05 * len(native_split["documents"])
        for chunk in chunks:
            missing = [k for k in PROVENANCE if chunk.meta.get(k) in (None, "", [])]
            assert not missing or missing == ["item_title"], (chunk.id, missing)
            assert all(1 <= p <= 25 for p in chunk.meta["page_numbers"])
        tables = [c for c in chunks if c.meta["modality"] == "table"]
        assert tables and all(c.meta.get("table_id") for c in tables)


def test_docling_pdf_without_models_fails_that_file_only(fixtures, tmp_path, monkeypatch):
    pytest.importorskip("docling", reason="the [docling] extra is not installed")
    monkeypatch.setenv("DOCLING_ARTIFACTS_PATH", str(tmp_path))  # no models there: never a download
    pdf = fixtures / "pepsico-8k-2023-05-05.pdf"
    html = tmp_path / "short.html"
    html.write_bytes(b"<html><body><p>ACME CORP FORM 8-K</p><p>Item 2.02 Results of Operations</p></body></html>")
    result = FilingConverter(backend="docling").run(sources=[pdf, html])
    assert len(result["documents"]) == 1 and result["documents"][0].meta[schema.SOURCE_PATH] == str(html)
    [failure] = result["failures"]
    assert failure["source"] == str(pdf)
    assert failure["error"].startswith(f"{pdf}: PDF through Docling needs its layout")
    assert "\n" not in failure["error"]
