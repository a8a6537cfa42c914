"""Parse and split every filing under some folders in time-bounded worker processes, and report the cost.

Proves that every filing parses in bounded time (one 10-K once hung the indexer through a backtracking regex) and
shows where parsing is slow. Per filing: form, pages, ms/page, chunks, Items found, failures. Then the slowest 10
filings by ms/page, the slowest page, the median ms/page per form, and every filing over 3x its form's median.

    python benchmarks/sweep_corpus.py DIR_OR_FILE... [--adversarial] [--timeout 600] [--workers 1]
        [--probe 3] [--page-timeout 60] [--index --store DIR] [--out sweep.json] [--in-process] [-v]

- Filings are ``.pdf .htm .html .gz`` files found under the arguments (recursively). ``--adversarial`` also
  generates ``benchmarks/make_adversarial.py``'s corpus into a temporary folder and sweeps it; a
  ``manifest.json`` next to filings (the generator writes one) names the one-line errors expected of a file
  (e.g. an all-scanned filing without OCR) and the Items it really has.
- Parsing runs through ``haystack_fin.indexing_runner.parse_filings`` (the parse stage of the shipped indexing
  pipeline: converter and splitter), so the time bound and the crash isolation are the indexer's own: a filing
  past ``--timeout`` is reported as timed out and the sweep goes on. ms/page is the parse stage's wall time in the
  worker (worker start-up and model-free pipeline loading excluded) over the filing's pages.
- The slowest page: the parse stage is timed per page only for the ``--probe`` slowest PDFs by ms/page and for
  every PDF that timed out, each page parsed alone as a one-page PDF in the same workers with ``--page-timeout``
  (so a hanging page is named). This costs about one more parse of those filings, not of the corpus. The sum
  of a filing's page times next to its whole time shows cost that grows with the document rather than the page.
- Image-only (scanned) pages are found with PyMuPDF (little text, an image over a large part of the page); such
  a page is "OCR'd" when a text chunk cites it. Filings with OCR'd pages are reported separately and left out of
  the medians and of the 3x flags.
- ``--index --store DIR`` afterwards indexes the filings that parsed through ``index_filings`` (embedding, trees,
  store) and reports its totals (parsing runs again there: the indexer reports no per-filing times).

Exit status 1 when a filing timed out, a worker died, a failure was not one line, or a failure was not one the
manifest expects; 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pymupdf  # after the environment above, which spawned workers inherit

from haystack_fin.core.ingest.filing_identity import filing_id_for
from haystack_fin.core.text import estimate_tokens
from haystack_fin.indexing_runner import index_filings, parse_filings
from haystack_fin.pipeline_loader import pipeline_dict

logger = logging.getLogger("sweep_corpus")

SUFFIXES = (".pdf", ".htm", ".html", ".gz")
MANIFEST = "manifest.json"
FLAG_FACTOR = 3.0
SLOWEST_N = 10
# An image-only page: fewer non-space characters than this, and one image over this share of the page (the same
# rule as core/ingest/ocr.py's needs_ocr, repeated here so the sweep can tell scanned pages apart without the OCR
# extra).
_SCAN_MAX_CHARS = 20
_SCAN_MIN_IMAGE_SHARE = 0.3


@dataclass
class FilingResult:
    source: str
    name: str
    form: str = ""
    pages: int = 0
    seconds: float = 0.0
    ms_per_page: float | None = None
    chunks: int = 0
    table_chunks: int = 0
    chars_per_page: float = 0.0
    max_chunk_tokens: int = 0  # estimated word pieces of the longest chunk
    chunks_over_budget: int = 0  # chunks longer than the splitter's chunk_tokens (tables excluded)
    items: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    timed_out: bool = False
    expected_failure: bool = False  # every failure is one the manifest allows
    image_only_pages: list[int] = field(default_factory=list)
    ocr_pages: list[int] = field(default_factory=list)  # image-only pages that a text chunk cites
    expected_items: list[str] | None = None
    items_unread: list[str] = field(default_factory=list)  # expected Items on image-only pages nobody OCR'd
    items_missing: list[str] = field(default_factory=list)
    items_unexpected: list[str] = field(default_factory=list)
    probe: dict[str, Any] | None = None  # per-page timing (see probe_pages)
    flag: str = ""  # why this filing is over 3x its form's median


# --- finding filings ------------------------------------------------------------------------------------------


def find_filings(paths: Iterable[str | Path]) -> list[Path]:
    """Filing files named or found (recursively) under ``paths``, sorted, each once."""
    found: dict[Path, Path] = {}
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            candidates: Iterable[Path] = [path]
        elif path.is_dir():
            candidates = sorted(p for p in path.rglob("*") if p.is_file())
        else:
            raise FileNotFoundError(f"{raw}: no such file or folder")
        for p in candidates:
            if p.name.lower().endswith(SUFFIXES):
                found.setdefault(p.resolve(), p)
    return sorted(found.values(), key=lambda p: str(p))


def load_manifest(files: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """Expectations by resolved file path, from every ``manifest.json`` next to a filing."""
    out: dict[str, dict[str, Any]] = {}
    for folder in sorted({p.parent for p in files}):
        manifest = folder / MANIFEST
        if manifest.is_file():
            for name, spec in json.loads(manifest.read_text()).items():
                out[str((folder / name).resolve())] = spec
    return out


# --- scanned pages --------------------------------------------------------------------------------------------


def image_only_pages(path: Path) -> list[int]:
    """1-based pages of a PDF with (almost) no text layer but an image over a large part of the page.

    Cheap: ``get_images`` reads the page's resources only, and text is extracted only from pages with images."""
    if not path.name.lower().endswith(".pdf"):
        return []
    pages = []
    try:
        with pymupdf.open(path) as doc:
            for page in doc:
                if not page.get_images():
                    continue
                if len("".join(page.get_text("text").split())) >= _SCAN_MAX_CHARS:
                    continue
                area = abs(page.rect.width * page.rect.height) or 1.0
                covered = max(
                    (abs((b[2] - b[0]) * (b[3] - b[1])) / area for b in (i["bbox"] for i in page.get_image_info())),
                    default=0.0,
                )
                if covered >= _SCAN_MIN_IMAGE_SHARE:
                    pages.append(page.number + 1)
    except Exception as exc:  # an unreadable PDF is the parser's to report; here it just has no scanned pages
        logger.debug("image_only_pages(%s): %s", path, exc)
    return pages


# --- the sweep ------------------------------------------------------------------------------------------------


def _result(
    outcome: Any, path: Path, expectations: dict[str, Any] | None, chunk_budget: int | None = None
) -> FilingResult:
    r = FilingResult(source=str(path), name=path.name, seconds=outcome.seconds, timed_out=outcome.timed_out)
    r.failures = list(outcome.failures)
    nodes = [d for d in outcome.documents if d.meta.get("node_type") == "filing"]
    chunks = [d for d in outcome.documents if d.meta.get("node_type") != "filing"]
    if nodes:
        node = nodes[0]
        r.form = str(node.meta.get("form") or "")
        r.items = [str(it["item"]) for it in node.meta.get("items") or []]
    else:  # a failed filing: at least the Items its chunks carry (none)
        r.items = list(dict.fromkeys(str(c.meta.get("item")) for c in chunks if c.meta.get("item")))
    r.pages = outcome.n_pages
    r.chunks = outcome.n_chunks
    r.table_chunks = sum(1 for c in chunks if c.meta.get("modality") == "table")
    if r.pages:
        r.ms_per_page = 1000.0 * r.seconds / r.pages
        r.chars_per_page = sum(len(c.content or "") for c in chunks) / r.pages
    sizes = [(estimate_tokens(c.content or ""), c.meta.get("modality")) for c in chunks]
    r.max_chunk_tokens = max((n for n, _ in sizes), default=0)
    if chunk_budget:
        # Overlap and a heading line may push a text chunk a little past the budget; 1.5x is not that.
        r.chunks_over_budget = sum(1 for n, m in sizes if m == "text" and n > 1.5 * chunk_budget)
    r.image_only_pages = image_only_pages(path)
    if r.image_only_pages:
        cited = {p for c in chunks if c.meta.get("modality") == "text" for p in c.meta.get("page_numbers") or []}
        r.ocr_pages = [p for p in r.image_only_pages if p in cited]
    allowed = (expectations or {}).get("may_fail_with") or []
    r.expected_failure = bool(r.failures) and all(any(a in f for a in allowed) for f in r.failures)
    if expectations and expectations.get("items") is not None and not r.failures:
        r.expected_items = list(expectations["items"])
        unread_ok = not r.ocr_pages and r.image_only_pages
        r.items_unread = [i for i in expectations.get("ocr_items") or [] if i not in r.items and unread_ok]
        r.items_missing = [i for i in r.expected_items if i not in r.items and i not in r.items_unread]
        r.items_unexpected = [i for i in dict.fromkeys(r.items) if i not in r.expected_items and i != "cover"]
    return r


def sweep(
    files: list[Path],
    pipeline_data: dict[str, Any],
    *,
    timeout_s: float,
    workers: int,
    in_process: bool = False,
    manifest: dict[str, dict[str, Any]] | None = None,
    progress: bool = True,
) -> list[FilingResult]:
    """Parse and split every file through the indexer's worker API; one ``FilingResult`` per file, in order."""
    manifest = manifest or {}
    splitter = (pipeline_data.get("components") or {}).get("splitter") or {}
    budget = (splitter.get("init_parameters") or {}).get("chunk_tokens")
    results = []
    outcomes = parse_filings(
        [str(p) for p in files], pipeline_data, timeout_s=timeout_s, workers=workers, in_process=in_process
    )
    for path, outcome in zip(files, outcomes, strict=True):
        r = _result(outcome, path, manifest.get(str(path.resolve())), budget)
        results.append(r)
        if progress:
            print(_line(r), flush=True)
    return results


def _one_page_pdfs(path: Path, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    pages = []
    with pymupdf.open(path) as src:
        for i in range(src.page_count):
            one = pymupdf.open()
            one.insert_pdf(src, from_page=i, to_page=i)
            target = out_dir / f"{path.stem}.p{i + 1:05d}.pdf"
            one.save(target)
            one.close()
            pages.append(target)
    return pages


def probe_pages(
    result: FilingResult,
    pipeline_data: dict[str, Any],
    *,
    timeout_s: float,
    workers: int,
    in_process: bool,
    tmp: Path,
) -> dict[str, Any]:
    """Time the parse stage on each page of a PDF alone (one-page PDFs, same workers, ``timeout_s`` per page)."""
    started = time.perf_counter()
    try:
        pages = _one_page_pdfs(Path(result.source), tmp / f"probe-{Path(result.source).stem}")
    except Exception as exc:  # PyMuPDF raises several types for a damaged file; the sweep already reported it
        return {"error": f"{result.name}: cannot split into pages ({exc})".splitlines()[0]}
    times: list[float] = []
    timed_out: list[int] = []
    failed: list[int] = []
    outcomes = parse_filings(
        [str(p) for p in pages], pipeline_data, timeout_s=timeout_s, workers=workers, in_process=in_process
    )
    for page_no, outcome in enumerate(outcomes, start=1):
        times.append(outcome.seconds)
        if outcome.timed_out:
            timed_out.append(page_no)
        elif any("no extractable text" not in f for f in outcome.failures):
            failed.append(page_no)  # an empty page alone is "no extractable text": not a finding
    for p in pages:
        p.unlink(missing_ok=True)
    slowest = max(range(len(times)), key=lambda i: times[i]) if times else None
    total = sum(times)
    return {
        "pages": len(times),
        "page_seconds": [round(t, 4) for t in times],
        "slowest_page": None if slowest is None else slowest + 1,
        "slowest_page_ms": None if slowest is None else round(1000 * times[slowest], 1),
        "median_page_ms": round(1000 * statistics.median(times), 1) if times else None,
        "sum_of_pages_s": round(total, 3),
        # > 1: the whole filing costs more than its pages alone (cost that grows with the document).
        "whole_over_pages": round(result.seconds / total, 2) if total and not result.timed_out else None,
        "timed_out_pages": timed_out,
        "failed_pages": failed,
        "probe_wall_s": round(time.perf_counter() - started, 1),
    }


# --- the summary ----------------------------------------------------------------------------------------------


def _ok(r: FilingResult) -> bool:
    return not r.failures and not r.timed_out and r.ms_per_page is not None


def summarize(results: list[FilingResult]) -> dict[str, Any]:
    """Slowest filings, slowest probed page, per-form medians, 3x flags, OCR'd filings, failures."""
    timed = [r for r in results if _ok(r) and not r.ocr_pages]
    by_form: dict[str, list[float]] = {}
    for r in timed:
        by_form.setdefault(r.form or "?", []).append(r.ms_per_page or 0.0)
    medians = {form: round(statistics.median(v), 2) for form, v in sorted(by_form.items())}
    flagged = []
    for r in timed:
        median = medians[r.form or "?"]
        if median and (r.ms_per_page or 0.0) > FLAG_FACTOR * median:
            r.flag = _hint(r, median)
            flagged.append(r)
    slowest = sorted(timed, key=lambda r: -(r.ms_per_page or 0.0))[:SLOWEST_N]
    probed = [r for r in results if r.probe and r.probe.get("slowest_page")]
    worst = max(probed, key=lambda r: r.probe["slowest_page_ms"], default=None)  # type: ignore[index]  # probed: only results with a probe
    failures = [
        {"file": r.name, "failure": f, "expected": r.expected_failure, "one_line": "\n" not in f}
        for r in results
        for f in r.failures
    ]
    unexpected = [f for f in failures if not f["expected"] or not f["one_line"] or "timed out" in f["failure"]] + [
        {"file": r.name, "failure": f"page {p} timed out when parsed alone", "expected": False, "one_line": True}
        for r in probed
        for p in r.probe["timed_out_pages"]  # type: ignore[index]  # probed: only results with a probe
    ]
    return {
        "n_filings": len(results),
        "n_pages": sum(r.pages for r in results),
        "parse_seconds": round(sum(r.seconds for r in results), 2),
        "form_medians_ms_per_page": medians,
        "form_counts": {form: len(v) for form, v in sorted(by_form.items())},
        "slowest": [{"file": r.name, "form": r.form, "pages": r.pages, "ms_per_page": r.ms_per_page} for r in slowest],
        "slowest_page": None
        if worst is None
        else {
            "file": worst.name,
            "page": worst.probe["slowest_page"],  # type: ignore[index]  # probed: only results with a probe
            "ms": worst.probe["slowest_page_ms"],  # type: ignore[index]  # probed: only results with a probe
            "filing_median_page_ms": worst.probe["median_page_ms"],  # type: ignore[index]  # probed: only results with a probe
        },
        "flagged": [{"file": r.name, "form": r.form, "ms_per_page": r.ms_per_page, "why": r.flag} for r in flagged],
        "ocr": [
            {"file": r.name, "ms_per_page": r.ms_per_page, "ocr_pages": r.ocr_pages, "image_only": r.image_only_pages}
            for r in results
            if r.image_only_pages
        ],
        "failures": failures,
        "unexpected_failures": unexpected,
        "oversized_chunks": [
            {"file": r.name, "chunks_over_budget": r.chunks_over_budget, "max_chunk_tokens": r.max_chunk_tokens}
            for r in results
            if r.chunks_over_budget
        ],
        "items_unread_without_ocr": [{"file": r.name, "items": r.items_unread} for r in results if r.items_unread],
        "item_mismatches": [
            {"file": r.name, "missing": r.items_missing, "unexpected": r.items_unexpected}
            for r in results
            if r.items_missing or r.items_unexpected
        ],
    }


def _hint(r: FilingResult, median: float) -> str:
    """What sets this filing apart: measured facts, not a diagnosis."""
    parts = [f"{(r.ms_per_page or 0) / median:.1f}x the {r.form or '?'} median {median:.1f} ms/page"]
    if r.probe and r.probe.get("slowest_page"):
        p = r.probe
        parts.append(
            f"slowest page {p['slowest_page']} {p['slowest_page_ms']:.0f} ms (page median {p['median_page_ms']:.0f} "
            f"ms), whole/sum-of-pages {p['whole_over_pages']}"
        )
    parts.append(f"{r.chars_per_page:,.0f} chunk chars/page, {r.table_chunks} table blocks, {r.chunks} chunks")
    return "; ".join(parts)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _line(r: FilingResult) -> str:
    items = " ".join(r.items) if r.items else "none"
    text = f"{r.name}: {r.form or '?'} {r.pages}p {_ms(r.ms_per_page)} ms/page {r.chunks} chunks; Items {items}"
    if r.image_only_pages:
        text += f"; image-only pages {r.image_only_pages} (OCR'd {r.ocr_pages})"
    if r.items_unread:
        text += f"; Items on unread scanned pages {r.items_unread}"
    if r.items_missing or r.items_unexpected:
        text += f"; Items missing {r.items_missing or '-'}, unexpected {r.items_unexpected or '-'}"
    for f in r.failures:
        text += f"\n    failure{' (expected)' if r.expected_failure else ''}: {f}"
    return text


def print_summary(summary: dict[str, Any]) -> None:
    print(
        f"\n{summary['n_filings']} filings, {summary['n_pages']:,} pages, "
        f"{summary['parse_seconds']:.1f} s of parse stage"
    )
    print("\nslowest filings by ms/page:")
    for s in summary["slowest"]:
        print(f"  {s['ms_per_page']:8.1f}  {s['file']} ({s['form']}, {s['pages']}p)")
    sp = summary["slowest_page"]
    if sp:
        print(
            f"\nslowest page (probed filings): {sp['file']} page {sp['page']}: {sp['ms']:.0f} ms "
            f"(that filing's page median {sp['filing_median_page_ms']:.0f} ms)"
        )
    print("\nmedian ms/page per form (filings without failures or OCR'd pages):")
    for form, median in summary["form_medians_ms_per_page"].items():
        print(f"  {form:<18} {median:7.1f}  ({summary['form_counts'][form]} filings)")
    print(f"\nover {FLAG_FACTOR:g}x their form's median: {len(summary['flagged'])}")
    for f in summary["flagged"]:
        print(f"  {f['file']}: {f['ms_per_page']:.1f} ms/page: {f['why']}")
    if summary["ocr"]:
        print("\nfilings with image-only pages (reported apart from the medians):")
        for o in summary["ocr"]:
            print(
                f"  {o['file']}: {_ms(o['ms_per_page'])} ms/page, image-only {o['image_only']}, OCR'd {o['ocr_pages']}"
            )
    if summary["oversized_chunks"]:
        print("\ntext chunks over 1.5x the splitter's chunk_tokens:")
        for o in summary["oversized_chunks"]:
            print(f"  {o['file']}: {o['chunks_over_budget']} (longest ~{o['max_chunk_tokens']:,} tokens)")
    for u in summary["items_unread_without_ocr"]:
        print(f"  {u['file']}: Items {u['items']} are on image-only pages (not OCR'd)")
    if summary["item_mismatches"]:
        print("\nItems differing from the manifest:")
        for m in summary["item_mismatches"]:
            print(f"  {m['file']}: missing {m['missing'] or '-'}, unexpected {m['unexpected'] or '-'}")
    print(f"\nfailures: {len(summary['failures'])} ({len(summary['unexpected_failures'])} unexpected)")
    for f in summary["failures"]:
        print(f"  {'expected  ' if f['expected'] else 'UNEXPECTED'} {f['failure'].splitlines()[0]}")
    for f in summary["unexpected_failures"]:
        if f not in summary["failures"]:
            print(f"  UNEXPECTED {f['file']}: {f['failure']}")


# --- entry point ----------------------------------------------------------------------------------------------


def _generator() -> Any:
    """benchmarks/make_adversarial.py as a module (benchmarks/ is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_adversarial", Path(__file__).with_name("make_adversarial.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_adversarial", module)  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def run(
    paths: list[str],
    *,
    adversarial_dir: Path | None = None,
    timeout_s: float = 600,
    workers: int = 1,
    probe: int = 3,
    page_timeout_s: float = 60,
    in_process: bool = False,
    store: str | None = None,
    qdrant_url: str | None = None,
    index: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """The whole sweep; returns the JSON-ready report (``filings`` and ``summary``)."""
    started = time.perf_counter()
    load_before = os.getloadavg()
    generated_s = None
    if adversarial_dir is not None:
        t0 = time.perf_counter()
        _generator().generate(adversarial_dir)
        generated_s = round(time.perf_counter() - t0, 1)
        paths = [*paths, str(adversarial_dir)]
    files = find_filings(paths)
    if not files:
        raise FileNotFoundError(f"no filings ({', '.join(SUFFIXES)}) under {', '.join(paths)}")
    pipeline_data = pipeline_dict("indexing", store, qdrant_url)
    results = sweep(
        files,
        pipeline_data,
        timeout_s=timeout_s,
        workers=workers,
        in_process=in_process,
        manifest=load_manifest(files),
        progress=progress,
    )
    # OCR'd filings are reported apart (a page costs a minute of OCR, far past --page-timeout): the probe looks for
    # slow parsing, not for OCR's known cost.
    pdfs = [r for r in results if r.name.lower().endswith(".pdf") and r.pages and not r.ocr_pages]
    to_probe = {r.source: r for r in sorted(pdfs, key=lambda r: -(r.ms_per_page or 0.0))[:probe]}
    for r in results:
        if r.timed_out and r.name.lower().endswith(".pdf"):
            to_probe[r.source] = r
    with tempfile.TemporaryDirectory(prefix="sweep-probe-") as tmp:
        for r in to_probe.values():
            r.probe = probe_pages(
                r, pipeline_data, timeout_s=page_timeout_s, workers=workers, in_process=in_process, tmp=Path(tmp)
            )
            if progress:
                p = r.probe
                print(
                    f"probe {r.name}: slowest page {p['slowest_page']} {_ms(p['slowest_page_ms'])} ms, page median "
                    f"{_ms(p['median_page_ms'])} ms, whole/sum-of-pages {p['whole_over_pages']}, "
                    f"timed-out pages {p['timed_out_pages'] or '-'} ({p['probe_wall_s']} s)",
                    flush=True,
                )
    summary = summarize(results)
    report: dict[str, Any] = {
        "command": sys.argv,
        "timeout_s": timeout_s,
        "workers": workers,
        "generate_seconds": generated_s,
        "filings": [asdict(r) for r in results],
        "summary": summary,
    }
    if index:
        ok = [r.source for r in results if _ok(r)]
        t0 = time.perf_counter()
        # Each file under its file-stem id: the adversarial files share one made-up cover (company, form, period),
        # which would make them one filing by default.
        metas = [{"filing_id": filing_id_for(s)} for s in ok]
        rep = index_filings(
            ok, pipeline_data, metas, timeout_s=timeout_s, workers=workers, quiet=not progress, in_process=in_process
        )
        report["index"] = {**asdict(rep), "wall_s": round(time.perf_counter() - t0, 1)}
        # Per page: parse and write stages only; rep.seconds also holds loading the models and starting workers.
        per_page = 1000 * (rep.parse_seconds + rep.write_seconds) / rep.pages if rep.pages else None
        report["index"]["ms_per_page"] = None if per_page is None else round(per_page, 1)
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    # Timings are wall clock on a shared machine: the load says how far to trust them.
    report["load_average"] = {
        "before": [round(x, 2) for x in load_before],
        "after": [round(x, 2) for x in os.getloadavg()],
    }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="folders or files of filings")
    parser.add_argument("--adversarial", action="store_true", help="also generate and sweep the adversarial set")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per filing (default 600)")
    parser.add_argument("--workers", type=int, default=1, help="parse worker processes (default 1)")
    parser.add_argument("--probe", type=int, default=3, help="time pages alone in the N slowest PDFs (default 3)")
    parser.add_argument("--page-timeout", type=float, default=60, help="seconds per probed page (default 60)")
    parser.add_argument("--in-process", action="store_true", help="parse in this process (no time bound)")
    parser.add_argument("--index", action="store_true", help="then index the filings that parsed (needs --store)")
    parser.add_argument("--store", default=None, help="embedded Qdrant folder for --index")
    parser.add_argument("--qdrant-url", default=None, help="Qdrant server for --index")
    parser.add_argument("--out", default=None, help="write the report as JSON here")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.ERROR, format="%(levelname)s %(message)s")
    if not args.paths and not args.adversarial:
        parser.error("give folders or files of filings, or --adversarial")
    if args.index and not (args.store or args.qdrant_url):
        parser.error("--index needs --store DIR or --qdrant-url URL")
    try:
        with tempfile.TemporaryDirectory(prefix="adversarial-") as adv:
            report = run(
                args.paths,
                adversarial_dir=Path(adv) if args.adversarial else None,
                timeout_s=args.timeout,
                workers=args.workers,
                probe=args.probe,
                page_timeout_s=args.page_timeout,
                in_process=args.in_process,
                store=args.store,
                qdrant_url=args.qdrant_url,
                index=args.index,
            )
    except (FileNotFoundError, ValueError) as exc:
        if args.verbose:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_summary(report["summary"])
    if "index" in report:
        ix = report["index"]
        print(
            f"\nindexed {ix['n_ok']} filings ({ix['pages']} pages): {_ms(ix['ms_per_page'])} ms/page (parse "
            f"{ix['parse_seconds']:.1f} s + write {ix['write_seconds']:.1f} s; {ix['seconds']:.1f} s with model "
            f"loading), {ix['n_failed']} failed"
        )
        for f in ix["failures"]:
            print(f"  index failure: {f}")
    la = report["load_average"]
    print(f"\nwall {report['wall_seconds']} s; load average (1/5/15 min) before {la['before']}, after {la['after']}")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
        print(f"report: {args.out}")
    return 1 if report["summary"]["unexpected_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
