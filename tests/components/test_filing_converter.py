import gzip

import pymupdf
import pytest
from haystack.dataclasses import ByteStream

from haystack_fin.components.filing_converter import FilingConverter, filing_id_for
from haystack_fin.core import schema
from haystack_fin.core.ingest.layout import Element


def _bad_files(tmp_path, fixtures):
    real = (fixtures / "pepsico-8k-2023-05-05.pdf").read_bytes()
    corrupt = tmp_path / "corrupt.pdf"
    corrupt.write_bytes(real[:2000])
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.pdf"
    doc = pymupdf.open()
    doc.new_page()
    doc.save(blank)
    encrypted = tmp_path / "encrypted.pdf"
    doc = pymupdf.open(fixtures / "pepsico-8k-2023-05-05.pdf")
    doc.save(encrypted, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    text = tmp_path / "notes.pdf"
    text.write_text("This is a plain text file that only pretends to be a PDF.\n")
    return {"corrupt": corrupt, "empty": empty, "blank": blank, "encrypted": encrypted, "text": text}


class TestFilingConverter:
    def test_init_validates(self):
        with pytest.raises(ValueError, match="formats"):
            FilingConverter(formats=["docx"])
        with pytest.raises(ValueError, match="table_finder"):
            FilingConverter(table_finder="magic")
        with pytest.raises(ValueError, match=r"backend must be one of \('native', 'docling'\), got 'pdfplumber'"):
            FilingConverter(backend="pdfplumber")

    def test_to_dict_from_dict(self):
        converter = FilingConverter(formats=["pdf"], table_finder="none", extract_images=False)
        data = converter.to_dict()
        assert data["init_parameters"] == {
            "formats": ["pdf"],
            "table_finder": "none",
            "extract_images": False,
            "ocr": True,
            "ocr_figures": True,
            "backend": "native",
            "max_decompressed_mb": 512,
        }
        assert FilingConverter.from_dict(data).table_finder == "none"
        assert FilingConverter.from_dict(FilingConverter(backend="docling").to_dict()).backend == "docling"
        assert FilingConverter.from_dict(FilingConverter(ocr_figures=False).to_dict()).ocr_figures is False

    def test_run_pdf_detects_metadata_and_keeps_layout(self, fixtures):
        result = FilingConverter().run(sources=[fixtures / "bestbuy-10q-2023-07-29.pdf"])
        assert result["failures"] == []
        doc = result["documents"][0]
        assert doc.meta[schema.FILING_ID] == "best-buy_10-Q_FY2024-Q2"  # from the cover, not the file name
        assert doc.meta[schema.FORM] == "10-Q"
        assert doc.meta[schema.FISCAL_YEAR] == 2024 and doc.meta[schema.FISCAL_QUARTER] == 2
        assert doc.meta[schema.N_PAGES] == 30
        assert doc.content.count("\f") == 29
        elements = [Element.from_dict(e) for e in doc.meta[schema.ELEMENTS]]
        tables = [e for e in elements if e.kind == "table"]
        assert any(e.page == 3 and any(r[0] == "Cash and cash equivalents" for r in e.table.rows) for e in tables)
        assert "\u00a0" not in doc.content  # Unicode spaces normalized

    def test_caller_meta_overrides_detection(self, fixtures):
        doc = FilingConverter().run(
            sources=[fixtures / "pepsico-8k-2023-05-05.pdf"], meta={"company": "PepsiCo", "filing_id": "pep-8k"}
        )["documents"][0]
        assert doc.meta["company"] == "PepsiCo" and doc.meta["filing_id"] == "pep-8k" and doc.id == "pep-8k#source"

    def test_run_html_bytestream(self, fixtures):
        data = gzip.decompress((fixtures / "aapl-10-q-2025-08-01.html.gz").read_bytes())
        stream = ByteStream(data=data, meta={"file_path": "aapl-10-q-2025-08-01.html"})
        doc = FilingConverter().run(sources=[stream])["documents"][0]
        assert (doc.meta["company"], doc.meta["form"], doc.meta["ticker"]) == ("Apple Inc.", "10-Q", "AAPL")
        assert doc.meta[schema.N_PAGES] == 25

    def test_bad_files_give_one_line_errors_and_do_not_stop_the_batch(self, tmp_path, fixtures):
        bad = _bad_files(tmp_path, fixtures)
        sources = [*bad.values(), fixtures / "pepsico-8k-2023-05-05.pdf"]
        result = FilingConverter().run(sources=sources)
        assert len(result["documents"]) == 1
        errors = {f["source"]: f["error"] for f in result["failures"]}
        assert set(errors) == {str(p) for p in bad.values()}
        for path, error in errors.items():
            assert error.startswith(path) and "\n" not in error
        assert "encrypted" in errors[str(bad["encrypted"])]
        assert "empty" in errors[str(bad["empty"])]
        assert "no extractable text" in errors[str(bad["blank"])]
        assert "damaged" in errors[str(bad["corrupt"])]
        assert "not a readable PDF" in errors[str(bad["text"])]

    def test_missing_file(self, tmp_path):
        result = FilingConverter().run(sources=[tmp_path / "nope.pdf"])
        assert result["documents"] == [] and "cannot read file" in result["failures"][0]["error"]


def test_filing_id_for():
    assert filing_id_for("/data/PEPSICO_2023_8K_dated-2023-05-05.pdf") == "PEPSICO_2023_8K_dated-2023-05-05"
    assert filing_id_for("aapl 10-q (1).html.gz") == "aapl-10-q-1"
