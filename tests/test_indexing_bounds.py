"""Resource bounds of indexing: gzipped filings decompressed as a bounded stream, parse workers under a memory
bound (a filing past it fails in one line and the batch goes on), and scanned pages without the [ocr] extra
(left out with one warning, listed by ``inspect``)."""

import gzip
import json
import multiprocessing
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pymupdf
import pytest
import yaml
from helpers.slow_converter import SlowConverter

from haystack_fin.cli import main
from haystack_fin.components.filing_converter import FilingConverter
from haystack_fin.indexing_runner import parse_filings
from haystack_fin.pipeline_loader import drop_components, pipeline_dict

FIXTURES = Path(__file__).parent / "fixtures"
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_a_gzip_bomb_fails_in_one_line_and_is_never_inflated_whole(tmp_path):
    bomb = tmp_path / "bomb.htm.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        page = b"<html><body>" + b"<p>revenue</p>" * 4096
        for _ in range(64 << 20 >> 16):  # 64 MB once decompressed, ~100 KB on disk
            f.write(page[: 1 << 16])
    assert bomb.stat().st_size < 1 << 20
    converter = FilingConverter(max_decompressed_mb=8)
    tracemalloc.start()
    try:
        result = converter.run(sources=[bomb])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result["documents"] == []
    assert result["failures"] == [
        {
            "source": str(bomb),
            "error": f"{bomb}: decompresses to more than 8 MB (the limit for a gzipped filing: max_decompressed_mb)",
        }
    ]
    assert peak < 24 << 20, f"{peak / 2**20:.0f} MB held while refusing a 64 MB stream capped at 8 MB"
    # A real gzipped filing under the cap reads as before.
    (doc,) = FilingConverter(max_decompressed_mb=8).run(sources=[FIXTURES / "aapl-10-q-2025-08-01.html.gz"])[
        "documents"
    ]
    assert doc.meta["form"] == "10-Q"
    broken = tmp_path / "broken.html.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00 not gzip at all")
    (failure,) = FilingConverter().run(sources=[broken])["failures"]
    assert failure["error"].startswith(f"{broken}: not a readable gzip file (") and "\n" not in failure["error"]


@pytest.fixture
def slow_pipeline(monkeypatch) -> dict:
    """The shipped indexing pipeline with the test converter; the allowlist env reaches the spawned workers."""
    monkeypatch.setenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", SlowConverter.__module__)
    data = pipeline_dict("indexing")
    data["components"]["converter"]["type"] = f"{SlowConverter.__module__}.SlowConverter"
    return data


@pytest.mark.slow  # spawns parse workers (seconds each: they import Haystack)
def test_a_filing_past_the_worker_memory_bound_fails_in_one_line_and_the_batch_goes_on(slow_pipeline, tmp_path):
    hog = tmp_path / "hog.pdf"
    shutil.copy(FIXTURES / "pepsico-8k-2023-05-05.pdf", hog)
    good = str(FIXTURES / "pepsico-8k-2023-05-05.pdf")
    outcomes = list(parse_filings([str(hog), good], slow_pipeline, timeout_s=300, workers=1, worker_memory_mb=1536))
    assert outcomes[0].failures == [
        f"{hog}: the parse worker ran out of memory (limit 1536 MB; raise it with --worker-memory)"
    ]
    assert not outcomes[1].failures and outcomes[1].n_chunks > 0  # a fresh worker parsed the next filing
    assert multiprocessing.active_children() == []


@pytest.mark.slow  # generates and parses the 1,000-page adversarial 10-K in a worker (~30 s)
def test_the_default_worker_memory_passes_the_1000_page_adversarial_filing(tmp_path):
    from haystack_fin.indexing_runner import DEFAULT_WORKER_MEMORY_MB

    subprocess.run(
        [sys.executable, str(BENCHMARKS / "make_adversarial.py"), str(tmp_path), "--only", "filing_1000_pages"],
        check=True,
        capture_output=True,
    )
    (outcome,) = parse_filings(
        [str(tmp_path / "filing_1000_pages.pdf")],
        pipeline_dict("indexing"),
        timeout_s=900,
        worker_memory_mb=DEFAULT_WORKER_MEMORY_MB,
    )
    assert outcome.failures == [] and outcome.n_pages == 1000


def _scanned_filing(path: Path) -> Path:
    """The Best Buy 10-Q's first two pages, then its page 29 as an image only (a scanned exhibit page)."""
    src = pymupdf.open(FIXTURES / "bestbuy-10q-2023-07-29.pdf")
    out = pymupdf.open(FIXTURES / "bestbuy-10q-2023-07-29.pdf")
    out.select([0, 1])
    scan = pymupdf.open()
    page = scan.new_page(width=src[28].rect.width, height=src[28].rect.height)
    page.insert_image(page.rect, pixmap=src[28].get_pixmap(dpi=72, colorspace=pymupdf.csGRAY))
    out.insert_pdf(scan)
    out.save(path)
    return path


@pytest.mark.slow  # spawns a parse worker (it imports Haystack)
def test_index_without_the_ocr_extra_warns_once_and_inspect_lists_the_skipped_pages(tmp_path, monkeypatch, capsys):
    # "Not installed", for this process and the spawned workers: an importable rapidocr_onnxruntime that fails.
    fake = tmp_path / "no-ocr"
    (fake / "rapidocr_onnxruntime").mkdir(parents=True)
    (fake / "rapidocr_onnxruntime" / "__init__.py").write_text("raise ImportError('rapidocr is not installed')\n")
    monkeypatch.syspath_prepend(str(fake))
    monkeypatch.delitem(sys.modules, "rapidocr_onnxruntime", raising=False)
    data = drop_components(pipeline_dict("indexing", str(tmp_path / "unused")), ("embedder", "tree_builder"))
    data["connections"].append({"sender": "splitter.documents", "receiver": "writer.documents"})
    yaml_path = tmp_path / "no-model.yaml"
    yaml_path.write_text(yaml.safe_dump(data))
    scan = _scanned_filing(tmp_path / "scan.pdf")
    idx = str(tmp_path / "idx")
    args = ["--pipeline", str(yaml_path), "--store", idx]
    capsys.readouterr()
    assert main(["index", str(scan), *args, "-q"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {scan}: page 3 has no text layer and was left out; install haystack-fin[ocr] to OCR scanned pages"
    ]
    assert main(["inspect", "--store", idx, "--json"]) == 0
    (profile,) = json.loads(capsys.readouterr().out)
    assert profile["skipped_pages"] == [3] and profile["n_pages"] == 3
    assert main(["inspect", "--store", idx]) == 0
    assert "  skipped pages (no text layer, OCR not installed): 3" in capsys.readouterr().out.splitlines()
