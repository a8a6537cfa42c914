"""benchmarks/make_adversarial.py and benchmarks/sweep_corpus.py on a few small adversarial cases (in-process)."""

import json
from pathlib import Path

import pytest
from helpers.benchmark_modules import load_benchmark

make_adversarial = load_benchmark("make_adversarial")
sweep_corpus = load_benchmark("sweep_corpus")

CASES = ["dot_leaders", "items_one_page", "scanned"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("adversarial")
    make_adversarial.generate(out, CASES)
    return out


def test_generator_is_deterministic(corpus: Path, tmp_path: Path) -> None:
    make_adversarial.generate(tmp_path, ["dot_leaders"])
    assert (tmp_path / "dot_leaders.pdf").read_bytes() == (corpus / "dot_leaders.pdf").read_bytes()
    manifest = json.loads((corpus / "manifest.json").read_text())
    assert set(manifest) == {"dot_leaders.pdf", "items_one_page.pdf", "scanned_one_page.pdf", "scanned_all_pages.pdf"}
    assert manifest["scanned_all_pages.pdf"]["may_fail_with"]


def test_sweep_reports_every_file_and_only_expected_failures(corpus: Path) -> None:
    report = sweep_corpus.run([str(corpus)], probe=1, in_process=True, progress=False)
    by_name = {f["name"]: f for f in report["filings"]}
    assert set(by_name) == {"dot_leaders.pdf", "items_one_page.pdf", "scanned_one_page.pdf", "scanned_all_pages.pdf"}
    summary = report["summary"]
    assert summary["unexpected_failures"] == []
    for name in ("dot_leaders.pdf", "items_one_page.pdf", "scanned_one_page.pdf"):
        assert by_name[name]["failures"] == [], name
        assert by_name[name]["form"] == "10-K"
        assert by_name[name]["ms_per_page"] > 0
    # 300-dot leaders without page numbers: the contents page is not taken for the Items, and nothing hangs.
    dots = by_name["dot_leaders.pdf"]
    assert dots["items_missing"] == [] and {"7", "7A", "15"} <= set(dots["items"])
    scanned_all = by_name["scanned_all_pages.pdf"]
    if scanned_all["failures"]:  # without OCR: one line naming the file
        assert scanned_all["expected_failure"]
        assert all("\n" not in f and "scanned_all_pages.pdf" in f for f in scanned_all["failures"])
    else:  # with OCR: every page was read
        assert scanned_all["ocr_pages"] == scanned_all["image_only_pages"]
    assert by_name["scanned_one_page.pdf"]["image_only_pages"] == [3]
    # The slowest PDF was timed page by page.
    probed = [f for f in report["filings"] if f["probe"]]
    assert len(probed) == 1 and probed[0]["probe"]["pages"] == probed[0]["pages"]
    assert summary["slowest_page"]["file"] == probed[0]["name"]
    assert summary["form_medians_ms_per_page"]["10-K"] > 0


def _result(name: str, ms: float, form: str = "10-K", **kw) -> "sweep_corpus.FilingResult":
    return sweep_corpus.FilingResult(
        source=name, name=name, form=form, pages=10, seconds=ms / 100, ms_per_page=ms, **kw
    )


def test_summary_flags_filings_over_three_times_their_forms_median() -> None:
    results = [
        _result("a", 10.0),
        _result("b", 11.0),
        _result("c", 12.0),
        _result("slow", 40.0),
        _result("q", 5.0, form="10-Q"),
        _result("scan", 500.0, image_only_pages=[1], ocr_pages=[1]),  # OCR'd: reported apart, not in the median
        _result("broken", 0.1, failures=["broken: not a readable PDF"]),
    ]
    summary = sweep_corpus.summarize(results)
    assert summary["form_medians_ms_per_page"] == {"10-K": 11.5, "10-Q": 5.0}
    assert [f["file"] for f in summary["flagged"]] == ["slow"]
    assert summary["slowest"][0]["file"] == "slow"
    assert [o["file"] for o in summary["ocr"]] == ["scan"]
    assert [f["file"] for f in summary["unexpected_failures"]] == ["broken"]
