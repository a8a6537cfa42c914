"""Validate benchmarks/data/more_filings_questions.jsonl (protocol: benchmarks/data/more_filings_protocol.md).

Checks, for every record: the FinanceBench keys; ``financebench_id`` is ``more_<doc_name>_<NN>``; the question type
and its ``domain_question_num`` (``dgNN`` for domain-relevant, a protocol kind for novel-generated, null for
metrics); at least one evidence item, each naming the record's filing, a page of it (0-based), an
``evidence_role``, no (page, role) pair twice; ``evidence_text`` occurs on that page and
``evidence_text_full_page`` is that page's text (whitespace normalized; PDF pages by PyMuPDF, HTML pages by the
native parser, as ``benchmarks/page_texts.py`` writes them). Prints counts per company, filing, type and kind.

    python benchmarks/validate_more_set.py [--questions FILE] [--filings DIR ...]
"""

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

from page_texts import doc_name, page_texts
from validate_analyst_set import normalize

SUBSET = "HAYSTACK_FIN_MORE"
TYPES = ("metrics-generated", "domain-relevant", "novel-generated")
KINDS = ("nv-cause", "nv-misfit", "nv-business", "nv-bs-words", "nv-acquisition", "nv-region", "nv-nongaap", "nv-event")
STRING_KEYS = ("financebench_id", "company", "doc_name", "question", "answer", "justification")
EVIDENCE_KEYS = ("evidence_text", "doc_name", "evidence_page_num", "evidence_text_full_page", "evidence_role")


def filing_pages(dirs: list[Path]) -> dict[str, Path]:
    """doc_name -> filing file, over the folders given."""
    found: dict[str, Path] = {}
    for folder in dirs:
        for path in sorted(folder.iterdir()):
            if re.search(r"\.(pdf|html?)(\.gz)?$", path.name, flags=re.IGNORECASE):
                found[doc_name(path)] = path
    return found


def check_record(rec: dict, pages_of: "PageCache") -> list[str]:
    problems = [f"{key} missing or empty" for key in STRING_KEYS if not str(rec.get(key) or "").strip()]
    if problems:
        return problems
    if rec.get("dataset_subset_label") != SUBSET:
        problems.append(f"dataset_subset_label is not {SUBSET!r}")
    match = re.fullmatch(r"more_(.+)_(\d{2})", rec["financebench_id"])
    if not match or match.group(1) != rec["doc_name"]:
        problems.append("financebench_id is not more_<doc_name>_<NN>")
    qtype, kind = rec.get("question_type"), rec.get("domain_question_num")
    if qtype not in TYPES:
        problems.append(f"question_type {qtype!r} is not one of {TYPES}")
    elif qtype == "domain-relevant" and not (isinstance(kind, str) and re.fullmatch(r"dg(0[1-9]|1\d|2[0-2])", kind)):
        problems.append(f"domain_question_num {kind!r} is not dg01..dg22")
    elif qtype == "novel-generated" and kind not in KINDS:
        problems.append(f"domain_question_num {kind!r} is not one of {KINDS}")
    elif qtype == "metrics-generated" and kind is not None:
        problems.append("domain_question_num of a metrics question should be null")
    evidence = rec.get("evidence")
    if not isinstance(evidence, list) or not evidence:
        return [*problems, "evidence missing or empty"]
    pages = pages_of.pages(rec["doc_name"])
    if pages is None:
        return [*problems, f"no filing named {rec['doc_name']!r} in the folders given"]
    seen: set[tuple[int, str]] = set()
    for n, item in enumerate(evidence):
        where = f"evidence[{n}]"
        if not isinstance(item, dict) or any(key not in item for key in EVIDENCE_KEYS):
            problems.append(f"{where} lacks one of {', '.join(EVIDENCE_KEYS)}")
            continue
        page, role = item["evidence_page_num"], str(item["evidence_role"]).strip()
        if item["doc_name"] != rec["doc_name"]:
            problems.append(f"{where} doc_name differs from the record's")
        elif not isinstance(page, int) or isinstance(page, bool) or not 0 <= page < len(pages):
            problems.append(f"{where} page {page!r} outside 0..{len(pages) - 1}")
        elif not role:
            problems.append(f"{where} evidence_role is empty")
        elif (page, role) in seen:
            problems.append(f"{where} page {page} with role {role!r} listed twice")
        else:
            seen.add((page, role))
            if normalize(str(item["evidence_text"])) not in pages[page] or not item["evidence_text"].strip():
                problems.append(f"{where} evidence_text not found on page {page}")
            if normalize(str(item["evidence_text_full_page"])) != pages[page]:
                problems.append(f"{where} evidence_text_full_page is not the text of page {page}")
    return problems


class PageCache:
    """Normalized page texts per filing, read once."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files
        self._pages: dict[str, list[str]] = {}

    def pages(self, name: str) -> list[str] | None:
        if name not in self.files:
            return None
        if name not in self._pages:
            self._pages[name] = [normalize(text) for text in page_texts(self.files[name])]
        return self._pages[name]


def main(argv: list[str] | None = None) -> int:
    here = Path(__file__).resolve().parent
    shared = Path("/work/shared/data/more-filings")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=Path, default=here / "data" / "more_filings_questions.jsonl")
    # repeated or not, every folder given counts (``--filings A --filings B`` as ``--filings A B``)
    parser.add_argument("--filings", type=Path, nargs="+", action="extend", default=None)
    args = parser.parse_args(argv)
    args.filings = args.filings or [shared / "pdfs", shared / "edgar-html"]
    missing = [str(p) for p in [args.questions, *args.filings] if not p.exists()]
    if missing:
        print(f"error: {', '.join(missing)}: no such file or folder", file=sys.stderr)
        return 1
    cache = PageCache(filing_pages(args.filings))
    errors: list[str] = []
    ids: Counter[str] = Counter()
    counts: dict[str, Counter[str]] = {name: Counter() for name in ("company", "doc_name", "type", "kind")}
    n_evidence = 0
    lines = args.questions.read_text(encoding="utf-8").splitlines()
    for line_no, line in enumerate(lines, start=1):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"line {line_no}: not JSON ({exc.msg})")
            continue
        label = str(rec.get("financebench_id", f"line {line_no}"))
        errors.extend(f"{label}: {p}" for p in check_record(rec, cache))
        ids[label] += 1
        counts["company"][str(rec.get("company"))] += 1
        counts["doc_name"][str(rec.get("doc_name"))] += 1
        counts["type"][str(rec.get("question_type"))] += 1
        counts["kind"][str(rec.get("domain_question_num"))] += 1
        n_evidence += len({(e.get("evidence_page_num")) for e in rec.get("evidence") or [] if isinstance(e, dict)})
    errors.extend(f"id {i} appears {n} times" for i, n in ids.items() if n > 1)
    print(f"{sum(ids.values())} questions, {n_evidence} (question, page) evidence pairs")
    for name, counter in counts.items():
        print(f"per {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counter.items())))
    for err in errors:
        print(f"error: {err}")
    print(f"{len(errors)} errors" if errors else "OK: schema, pages and evidence texts check out")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
