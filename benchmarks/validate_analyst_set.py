"""Validate benchmarks/data/analyst_questions.jsonl (FinanceBench format, hand-labelled analyst questions).

Checks, for every record:

- schema: the FinanceBench keys with the right types; ``financebench_id`` is ``analyst_<doc_name>_<NN>`` and
  ``domain_question_num`` is ``dg<NN>`` with the same style number (1..22); ids are unique; no (filing, style)
  pair is labelled twice; ``question_type`` is ``domain-relevant``; at least one evidence item;
- every evidence item names the record's filing, its PDF exists, ``evidence_page_num`` (0-based, as in
  FinanceBench) is a page of that PDF and no page is listed twice for one question;
- ``evidence_text`` occurs on that page's PyMuPDF text (``page.get_text()``) after whitespace normalization, and
  ``evidence_text_full_page`` is that page's text (same normalization), so the gold pages cannot drift from the PDFs.

Then prints the count of questions per style and per filing, and flags styles on fewer than ``--min-per-style``
filings. Exit status 1 when any check fails.

    python benchmarks/validate_analyst_set.py [--questions benchmarks/data/analyst_questions.jsonl]
        [--pdfs /work/shared/data/financebench-dev/pdfs] [--min-per-style 5]
"""

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pymupdf

N_STYLES = 22
SUBSET = "HAYSTACK_FIN_ANALYST"
STRING_KEYS = ("financebench_id", "company", "doc_name", "question", "answer", "justification")
EVIDENCE_KEYS = ("evidence_text", "doc_name", "evidence_page_num", "evidence_text_full_page")


def normalize(text: str) -> str:
    """Collapse every whitespace run to one space: PDF text differs in line breaks, not in words."""
    return re.sub(r"\s+", " ", text).strip()


class PageCache:
    """Normalized page texts per filing, read once with PyMuPDF."""

    def __init__(self, pdf_dir: Path) -> None:
        self.pdf_dir = pdf_dir
        self._pages: dict[str, list[str] | None] = {}

    def pages(self, doc_name: str) -> list[str] | None:
        if doc_name not in self._pages:
            path = self.pdf_dir / f"{doc_name}.pdf"
            if not path.is_file():
                self._pages[doc_name] = None
            else:
                with pymupdf.open(path) as doc:
                    self._pages[doc_name] = [normalize(page.get_text()) for page in doc]
        return self._pages[doc_name]


def check_record(rec: dict, cache: PageCache) -> list[str]:
    """Return the problems of one record (empty when it is valid)."""
    problems = []
    for key in STRING_KEYS:
        if not isinstance(rec.get(key), str) or not rec[key].strip():
            problems.append(f"{key} missing or empty")
    if problems:
        return problems
    if rec.get("question_type") != "domain-relevant":
        problems.append(f"question_type {rec.get('question_type')!r} is not 'domain-relevant'")
    if rec.get("question_reasoning") is not None:
        problems.append("question_reasoning should be null")
    if rec.get("dataset_subset_label") != SUBSET:
        problems.append(f"dataset_subset_label {rec.get('dataset_subset_label')!r} is not {SUBSET!r}")
    id_match = re.fullmatch(r"analyst_(.+)_(\d{2})", rec["financebench_id"])
    dg = rec.get("domain_question_num")
    dg_match = re.fullmatch(r"dg(\d{2})", dg) if isinstance(dg, str) else None
    if not id_match or id_match.group(1) != rec["doc_name"]:
        problems.append(f"financebench_id {rec['financebench_id']!r} is not analyst_<doc_name>_<NN>")
    if not dg_match or not 1 <= int(dg_match.group(1)) <= N_STYLES:
        problems.append(f"domain_question_num {dg!r} is not dg01..dg{N_STYLES}")
    elif id_match and id_match.group(2) != dg_match.group(1):
        problems.append(f"financebench_id style {id_match.group(2)} differs from domain_question_num {dg}")
    evidence = rec.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        return [*problems, "evidence missing or empty"]
    seen_pages: set[int] = set()
    for n, item in enumerate(evidence):
        where = f"evidence[{n}]"
        if not isinstance(item, dict) or any(key not in item for key in EVIDENCE_KEYS):
            problems.append(f"{where} lacks one of {', '.join(EVIDENCE_KEYS)}")
            continue
        if item["doc_name"] != rec["doc_name"]:
            problems.append(f"{where} doc_name {item['doc_name']!r} differs from the record's")
            continue
        page_num = item["evidence_page_num"]
        if not isinstance(page_num, int) or isinstance(page_num, bool):
            problems.append(f"{where} evidence_page_num {page_num!r} is not an integer")
            continue
        if page_num in seen_pages:
            problems.append(f"{where} page {page_num} listed twice")
        seen_pages.add(page_num)
        pages = cache.pages(item["doc_name"])
        if pages is None:
            problems.append(f"{where} no PDF {item['doc_name']}.pdf in {cache.pdf_dir}")
            continue
        if not 0 <= page_num < len(pages):
            problems.append(f"{where} page {page_num} outside 0..{len(pages) - 1}")
            continue
        snippet = normalize(str(item["evidence_text"]))
        if not snippet:
            problems.append(f"{where} evidence_text is empty")
        elif snippet not in pages[page_num]:
            problems.append(f"{where} evidence_text not found on page {page_num}: {snippet[:60]!r}")
        if normalize(str(item["evidence_text_full_page"])) != pages[page_num]:
            problems.append(f"{where} evidence_text_full_page is not the text of page {page_num}")
    return problems


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=here / "data" / "analyst_questions.jsonl")
    parser.add_argument("--pdfs", type=Path, default=Path("/work/shared/data/financebench-dev/pdfs"))
    parser.add_argument("--min-per-style", type=int, default=5)
    args = parser.parse_args(argv)
    if not args.questions.is_file():
        print(f"error: {args.questions}: no such file", file=sys.stderr)
        return 1
    if not args.pdfs.is_dir():
        print(f"error: {args.pdfs}: not a directory", file=sys.stderr)
        return 1

    cache = PageCache(args.pdfs)
    errors: list[str] = []
    ids: Counter[str] = Counter()
    pairs: Counter[tuple[str, str]] = Counter()
    by_style: Counter[str] = Counter()
    by_filing: Counter[str] = Counter()
    n_records = n_evidence = 0
    for line_no, line in enumerate(args.questions.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{args.questions}:{line_no}: not JSON ({exc.msg})")
            continue
        if not isinstance(rec, dict):
            errors.append(f"{args.questions}:{line_no}: not a JSON object")
            continue
        n_records += 1
        label = rec.get("financebench_id", f"line {line_no}")
        errors.extend(f"{args.questions}:{line_no}: {label}: {p}" for p in check_record(rec, cache))
        ids[str(label)] += 1
        style, doc = str(rec.get("domain_question_num")), str(rec.get("doc_name"))
        pairs[(doc, style)] += 1
        by_style[style] += 1
        by_filing[doc] += 1
        n_evidence += len(rec.get("evidence") or [])
    errors.extend(f"{args.questions}: id {i} appears {n} times" for i, n in ids.items() if n > 1)
    errors.extend(f"{args.questions}: {d} {s} labelled {n} times" for (d, s), n in pairs.items() if n > 1)

    print(f"{n_records} questions, {n_evidence} evidence pages, {len(by_filing)} filings")
    print("per style: " + ", ".join(f"{s} {by_style[s]}" for s in sorted(by_style)))
    for doc in sorted(by_filing):
        styles = sorted(s.removeprefix("dg") for (d, s) in pairs if d == doc)
        print(f"  {doc}: {by_filing[doc]} ({' '.join(styles)})")
    thin = [f"dg{n:02d}" for n in range(1, N_STYLES + 1) if by_style[f"dg{n:02d}"] < args.min_per_style]
    if thin:
        print(f"styles on fewer than {args.min_per_style} filings: {', '.join(thin)}")
    for err in errors:
        print(f"error: {err}")
    print(f"{len(errors)} errors" if errors else "OK: schema, pages and evidence texts check out")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
