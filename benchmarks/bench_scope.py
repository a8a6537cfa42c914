"""Scope benchmark: does FilingScope find the filing a question is about, however the question names its company?

The store holds filing nodes (what FilingScope reads; no chunks, so the dense fallback ranks by period and form):

* the real filings in ``shared/data`` (the FinanceBench dev slice, ``more-filings`` PDFs and EDGAR HTML, the
  ``edgar-html`` filings), each with the metadata ``detect_filing_meta`` reads from its first pages (the values
  indexing writes);
* look-alike clones: hundreds of companies drawn from the company reference table (real names, CIKs and tickers),
  each with a few filings (10-Ks, 10-Qs, earnings releases, 8-Ks) of its own fiscal years; some are renamed (their
  older filings carry another real company's name, linked only by the registrant's CIK or SEC file number, as
  filings link them), some have covers without tickers (pre-2019 10-Ks), some no CIK (PDFs).

Questions are generated per filing in every way of naming a company (``STYLES``) with fiscal years, quarters and
forms, plus questions naming companies of the reference table that are not in the store. The mention generators
below are written from how analysts write names, independently of ``core/retrieval/company_names.py``: they share
no code and no word list with the rules. Reported: doc_hit@1/5 of the scope's ranked filing ids (overall, per
style), the empty-result rate of questions about indexed companies, the notice rate (empty scope with a "not in the
indexed filings" notice) of questions about non-indexed ones, and the scope's start-up (reading the profiles and
building the company index). ``--code DIR`` runs another checkout's FilingScope on the same store and questions
(the baseline: the code before this benchmark).

    python benchmarks/bench_scope.py --out benchmarks/results/scope.json [--baseline-code /tmp/base-code]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

DATA = Path(os.environ.get("HAYSTACK_FIN_DATA", "/work/shared/data"))
PAGE_CACHE = Path("/tmp/haystack-fin-scope-pages")
FILING_DIRS = ("financebench-dev/pdfs", "more-filings/pdfs", "more-filings/edgar-html", "edgar-html")
FIRST_PAGES = 20
SEED = 26
N_CLONE_COMPANIES = 300
N_NUMBERED = 12
RENAMED_SHARE = 0.1
NO_CIK_SHARE = 0.5

# --- mention styles (written apart from the scope's rules) ---------------------------------------------------------

_FORMS_WORDS = {
    "inc",
    "inc.",
    "corp",
    "corp.",
    "corporation",
    "incorporated",
    "company",
    "co",
    "co.",
    "ltd",
    "ltd.",
    "plc",
    "llc",
    "l.p.",
    "lp",
    "n.v.",
    "s.a.",
    "ag",
    "se",
    "limited",
    "the",
}
_CORPORATE_WORDS = {
    "holdings",
    "holding",
    "group",
    "systems",
    "technologies",
    "international",
    "communications",
    "enterprises",
    "industries",
    "stores",
    "brands",
    "worldwide",
    "partners",
    "global",
}
_NUMBERS = {
    "1": "One",
    "2": "Two",
    "3": "Three",
    "4": "Four",
    "5": "Five",
    "7": "Seven",
    "8": "Eight",
    "9": "Nine",
    "10": "Ten",
    "21": "Twenty-One",
}


def _titled(name: str) -> str:
    """SEC writes many names in capitals ("JOHNSON & JOHNSON"); people write them in title case."""
    if name.upper() != name:
        return name
    return " ".join(
        w if len(w) <= 3 and w.isalpha() and w not in ("THE", "AND") else w.capitalize() for w in name.split()
    )


def _words(name: str) -> list[str]:
    name = re.sub(r"\s*/(?:[A-Za-z]{2,3}/|ADR\b|NEW/?)", " ", name)  # EDGAR's "/DE/", "/ADR" tags: never said
    return [w for w in re.split(r"[\s,]+", _titled(name)) if w]


def plain_name(name: str) -> str:
    """The name without its legal form: "Johnson & Johnson", "Best Buy Co"."""
    words = _words(name)
    if words and words[0].lower() == "the":
        words = words[1:]
    while len(words) > 1 and words[-1].lower() in _FORMS_WORDS:
        words.pop()
    return " ".join(words).strip(",. ")


def short_name(name: str) -> str | None:
    """What people call it: the plain name without trailing corporate words ("Adobe" of "Adobe Systems")."""
    words = plain_name(name).split()
    while len(words) > 1 and words[-1].lower().strip(".,") in _CORPORATE_WORDS | _FORMS_WORDS:
        words.pop()
    short = " ".join(words)
    return short if short != plain_name(name) else None


def initialism(name: str) -> str | None:
    """ "J&J" / "JnJ" for "Johnson & Johnson", "IBM" for "International Business Machines"."""
    words = [w for w in plain_name(name).split() if w.lower() not in ("of", "the")]
    if len(words) < 2 or any(not re.fullmatch(r"[A-Za-z&]+", w) for w in words):
        return None
    letters, amp = [], False
    for w in words:
        if w in ("&", "and", "And"):
            amp = True
            letters.append("&")
        elif len(w) >= 3 and w.isalpha():
            letters.append(w[0].upper())
        else:
            return None
    if letters[0] == "&" or letters[-1] == "&":
        return None
    core = "".join(letters)
    if amp:
        return core if random.random() < 0.5 else core.replace("&", "n")
    return core if len(core) >= 3 else None


def syllables(name: str) -> str | None:
    """ "AmEx" for "American Express": the first syllable of each of the first two words."""
    words = [w for w in (short_name(name) or plain_name(name)).split() if w.isalpha() and len(w) >= 4]
    if len(words) != 2:
        return None
    parts = []
    for w in words:
        m = re.match(r"[^aeiouAEIOU]*[aeiouAEIOU]+[^aeiouAEIOU]", w)
        if not m or m.end() >= len(w):
            return None
        parts.append(m.group().capitalize())
    return "".join(parts)


def number_words(name: str) -> str | None:
    plain = plain_name(name)
    m = re.search(r"\b(\d+)(?=[A-Za-z\s-])", plain)
    if not m or m.group(1) not in _NUMBERS:
        return None
    return plain[: m.start()] + _NUMBERS[m.group(1)] + " " + plain[m.end() :].lstrip("- ")


def typo(name: str, rng: random.Random) -> str | None:
    """One swapped pair of inner letters in the longest word of the short name."""
    base = short_name(name) or plain_name(name)
    words = base.split()
    i = max(range(len(words)), key=lambda k: len(words[k]))
    w = words[i]
    if len(w) < 6 or not w.isalpha():
        return None
    j = rng.randrange(1, len(w) - 2)
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
    return " ".join(words)


# --- questions ------------------------------------------------------------------------------------------------------

METRICS = (
    "total revenue",
    "operating income",
    "capital expenditure",
    "free cash flow",
    "net income",
    "gross margin",
    "cash and cash equivalents",
    "long-term debt",
    "diluted EPS",
    "inventory",
)
NON_GAAP = ("adjusted EBITDA", "organic sales growth", "adjusted EPS", "non-GAAP operating margin")
ORDINAL = {1: "first", 2: "second", 3: "third", 4: "fourth"}


def period_phrase(p: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    """(phrase, template kind) naming a filing's period and form the ways analysts do."""
    fy, q, form = p.get("fiscal_year"), p.get("fiscal_quarter"), p["form"]
    if form == "8-K":
        d = p.get("period_end", "")
        return (f"according to its 8-K dated {d}" if d else "according to its 8-K"), "event"
    if form == "earnings_release" and fy and q:
        return rng.choice(
            [
                f"in its Q{q} FY{fy} earnings release",
                f"in the {ORDINAL[q]} quarter of fiscal {fy}",
                f"in Q{q} {fy} per the press release",
            ]
        ), "release"
    if form.startswith("10-Q") and fy and q:
        return rng.choice(
            [f"in Q{q} of FY{fy}", f"in the {ORDINAL[q]} quarter of fiscal {fy}", f"in its 10-Q for Q{q} FY{fy}"]
        ), "quarter"
    if fy:
        return rng.choice(
            [
                f"in FY{fy}",
                f"in fiscal {fy}",
                f"for fiscal year {fy}",
                f"in its FY{fy} 10-K",
                f"per the {fy} annual report",
            ]
        ), "year"
    return "", "none"


def question_for(mention: str, p: dict[str, Any], rng: random.Random) -> str:
    phrase, kind = period_phrase(p, rng)
    if kind == "release":
        metric = rng.choice(NON_GAAP)
    elif kind == "event":
        metric = rng.choice(("the matters voted on", "the executive appointment", "the agreement terms"))
        return (
            f"What were {metric} {phrase} for {mention}?"
            if rng.random() < 0.5
            else (f"{mention}: what did the company report {phrase}?")
        )
    else:
        metric = rng.choice(METRICS)
    return rng.choice(
        [
            f"What was {mention}'s {metric} {phrase}?",
            f"How much {metric} did {mention} report {phrase}?",
            f"Based on {mention}'s filings, what was the {metric} {phrase}?",
        ]
    )


# --- store ----------------------------------------------------------------------------------------------------------


def cache_first_pages() -> None:
    """The first pages' text and parser meta of every real filing, as FilingConverter's parsers read them (a PDF
    cut to its first ``FIRST_PAGES`` pages first: the metadata reader never reads further)."""
    import pymupdf

    from haystack_fin.core.ingest.html import parse_html_filing
    from haystack_fin.core.ingest.pdf import parse_pdf_filing

    PAGE_CACHE.mkdir(parents=True, exist_ok=True)
    for folder in FILING_DIRS:
        for path in sorted((DATA / folder).iterdir()):
            out = PAGE_CACHE / f"{path.name}.json"
            if out.exists():
                continue
            if path.suffix.lower() == ".pdf":
                src = pymupdf.open(path)
                first = pymupdf.open()
                first.insert_pdf(src, from_page=0, to_page=min(FIRST_PAGES, src.page_count) - 1)
                parsed = parse_pdf_filing(path.name, data=first.tobytes())
                meta = {**(src.metadata or {}), **parsed.meta}
            else:
                parsed = parse_html_filing(path.name, data=path.read_bytes())
                meta = parsed.meta
            record = {"source": str(path), "page_texts": parsed.page_texts[:FIRST_PAGES], "meta": meta}
            out.write_text(json.dumps(record, default=str))


def real_profiles() -> list[dict[str, Any]]:
    """Filing node meta of the real filings, as detect_filing_meta reads it from their first pages."""
    from haystack_fin.core.ingest.filing_meta import detect_filing_meta

    cache_first_pages()
    out = []
    for f in sorted(PAGE_CACHE.glob("*.json")):
        d = json.loads(f.read_text())
        meta = detect_filing_meta(d["page_texts"], Path(d["source"]).name, d["meta"]).to_dict()
        fid = Path(d["source"]).name.rsplit(".", 1)[0]
        out.append({"filing_id": fid, **{k: v for k, v in meta.items() if v not in (None, "", [])}, "real": True})
    return out


def _fiscal_end_month(rng: random.Random) -> int:
    return rng.choice([12, 12, 12, 12, 1, 6, 9, 5])


def clone_profiles(reference: Any, used_ciks: set[str], rng: random.Random) -> tuple[list[dict], list[Any]]:
    """Clone companies from the reference table (not among the real filings' companies) with their filings; the
    rest of the table is returned for the questions about companies the store lacks."""
    pool = [c for c in reference if c.cik not in used_ciks and c.tickers and len(c.name) >= 4]
    rng.shuffle(pool)
    # Names with a number ("3M", "1-800-Flowers") are rare; a few of them so that the style has questions.
    numbered = [c for c in pool if number_words(c.name)][:N_NUMBERED]
    pool = numbered + [c for c in pool if c not in numbered]
    chosen, rest = pool[:N_CLONE_COMPANIES], pool[N_CLONE_COMPANIES:]
    renamed = set(rng.sample(range(len(chosen)), int(RENAMED_SHARE * len(chosen))))
    old_names = iter(rest[-len(renamed) :])
    rest = rest[: -len(renamed)]
    profiles = []
    for n, company in enumerate(chosen):
        fye = _fiscal_end_month(rng)
        years = sorted(rng.sample(range(2014, 2024), rng.randint(2, 4)))
        has_cik = rng.random() > NO_CIK_SHARE
        file_number = f"1-{int(company.cik) % 100000}"
        old = next(old_names).name if n in renamed else None
        rename_year = years[len(years) // 2] if old else None
        for y in years:
            name = old if (old and rename_year and y < rename_year) else company.name
            base = {
                "company": _titled(name) if rng.random() < 0.5 else name,
                "legal_name": name,
                "file_numbers": [file_number],
                "clone_of": company.cik,
                "current_name": company.name,
                "ticker_of_company": company.ticker,
            }
            if has_cik:
                base["cik"] = company.cik
            tickers = list(company.tickers) if y >= 2019 else []  # covers name symbols since 2019
            end = f"{y}-{fye:02d}-{28 if fye == 2 else 30}" if fye != 12 else f"{y}-12-31"
            profiles.append(
                {
                    **base,
                    "filing_id": f"C{n:03d}_{y}_10K",
                    "form": "10-K",
                    "fiscal_year": y,
                    "period": f"FY{y}",
                    "period_end": end,
                    "tickers": tickers,
                    "ticker": tickers[0] if tickers else "",
                }
            )
            if rng.random() < 0.4:
                q = rng.randint(1, 3)
                profiles.append(
                    {
                        **base,
                        "filing_id": f"C{n:03d}_{y}Q{q}_10Q",
                        "form": "10-Q",
                        "fiscal_year": y,
                        "fiscal_quarter": q,
                        "period": f"FY{y} Q{q}",
                        "tickers": tickers,
                        "ticker": tickers[0] if tickers else "",
                    }
                )
            if rng.random() < 0.25:
                profiles.append(
                    {
                        **base,
                        "filing_id": f"C{n:03d}_{y}Q4_EARNINGS",
                        "form": "earnings_release",
                        "fiscal_year": y,
                        "fiscal_quarter": 4,
                        "period": f"FY{y} Q4",
                        "tickers": [company.ticker],
                        "ticker": company.ticker,
                    }
                )
            if rng.random() < 0.15:
                d = f"{y + 1}-0{rng.randint(2, 5)}-{rng.randint(10, 28)}"
                profiles.append(
                    {
                        **base,
                        "filing_id": f"C{n:03d}_{y + 1}_8K",
                        "form": "8-K",
                        "fiscal_year": y + 1,
                        "period": d,
                        "period_end": d,
                        "tickers": tickers,
                        "ticker": tickers[0] if tickers else "",
                        "items": [{"item": "5.07"}],
                    }
                )
    return profiles, rest


# --- question generation --------------------------------------------------------------------------------------------


def _same_period(a: dict, b: dict) -> bool:
    return (
        a.get("form"),
        a.get("fiscal_year"),
        a.get("fiscal_quarter"),
        a.get("period_end") if a.get("form") == "8-K" else None,
    ) == (
        b.get("form"),
        b.get("fiscal_year"),
        b.get("fiscal_quarter"),
        b.get("period_end") if b.get("form") == "8-K" else None,
    )


def questions(profiles: list[dict], rest: list[Any], brands: dict[str, list[str]], rng: random.Random) -> list[dict]:
    out: list[dict] = []
    by_company: dict[str, list[dict]] = defaultdict(list)
    for p in profiles:
        by_company[p.get("clone_of") or plain_name(p.get("company", "")).lower()].append(p)
    for p in profiles:
        if not p.get("fiscal_year") and p["form"] != "8-K":
            continue
        siblings = by_company[p.get("clone_of") or plain_name(p.get("company", "")).lower()]
        if sum(_same_period(p, s) for s in siblings) > 1:
            continue  # two filings of one company for one period: a question cannot tell them apart
        name = p.get("current_name") or p.get("company", "")
        ticker = p.get("ticker_of_company") or p.get("ticker") or ""
        styles: dict[str, str | None] = {
            "name": plain_name(name),
            "short name": short_name(name),
            "ticker": (
                rng.choice([ticker, f"${ticker}", f"(NYSE: {ticker})"])
                if len(ticker) >= 3
                else (f"${ticker}" if ticker else None)
            ),
            "initialism": initialism(name),
            "syllables": syllables(name),
            "number as word": number_words(name),
            "typo": typo(name, rng),
        }
        if p.get("clone_of") and p.get("legal_name") != p.get("current_name"):
            styles["new name for old filing"] = plain_name(p["current_name"])
            styles["old name"] = plain_name(p["legal_name"])
        for target, aliases in brands.items():
            if plain_name(target).lower() == plain_name(p.get("company", "")).lower():
                styles["brand"] = rng.choice(aliases)
        for style, mention in styles.items():
            if mention:
                out.append(
                    {"style": style, "question": question_for(mention, p, rng), "gold": p["filing_id"], "indexed": True}
                )
    for company in rng.sample(rest, min(200, len(rest))):
        mention = plain_name(company.name) if rng.random() < 0.7 else company.ticker
        if not mention or len(mention) < 3:
            continue
        y = rng.randint(2015, 2023)
        out.append(
            {
                "style": "not indexed",
                "question": f"What was {mention}'s total revenue in FY{y}?",
                "gold": None,
                "indexed": False,
                "company": company.name,
                "ticker": company.ticker,
            }
        )
    return out


# --- running ----------------------------------------------------------------------------------------------------------


def build(rng: random.Random) -> dict[str, Any]:
    from haystack_fin.core.retrieval.companies import ALIAS_FILE, load_alias_file
    from haystack_fin.core.retrieval.company_reference import load_company_reference

    reference = load_company_reference()
    if reference is None:
        raise SystemExit("bench_scope needs the company reference table: pip install haystack-fin[companies]")
    real = real_profiles()
    used = set()
    for p in real:
        for k in ("cik",):
            if p.get(k):
                used.add(p[k])
        for t in p.get("tickers") or []:
            known = reference.by_symbol(t)
            if known:
                used.add(known.cik)
        for c in reference.named(p.get("company", "")):
            used.add(c.cik)
    clones, rest = clone_profiles(reference, used, rng)
    profiles = real + clones
    qs = questions(profiles, rest, load_alias_file(ALIAS_FILE), rng)
    return {"profiles": profiles, "questions": qs}


def run_scope(data: dict[str, Any]) -> dict[str, Any]:
    """FilingScope of the code on sys.path over the data's filing nodes; per question the ranked filing ids."""
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from haystack_fin.components.filing_scope import FilingScope

    store = InMemoryDocumentStore()
    docs = []
    for p in data["profiles"]:
        meta = {k: v for k, v in p.items() if k not in ("real", "clone_of", "current_name", "ticker_of_company")}
        meta["node_type"] = "filing"
        docs.append(Document(id=f"{p['filing_id']}#filing", content="", meta=meta))
    store.write_documents(docs)
    t0 = time.perf_counter()
    scope = FilingScope(document_store=store, refresh_seconds=None)
    scope.warm_up()
    startup = time.perf_counter() - t0
    results = []
    t1 = time.perf_counter()
    for q in data["questions"]:
        out = scope.run(query=q["question"])
        notices = [u for u in out["scope"].get("unmatched") or [] if u.get("kind") == "company"]
        results.append({"ids": out["filing_ids"][:10], "notice": bool(notices), "reason": out["scope"]["reason"]})
    per_q = (time.perf_counter() - t1) / max(1, len(data["questions"]))
    return {"startup_s": round(startup, 3), "per_question_ms": round(1000 * per_q, 2), "results": results}


def score(data: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    by_style: dict[str, Counter[str]] = defaultdict(Counter)
    misses: list[dict[str, Any]] = []
    for q, r in zip(data["questions"], run["results"], strict=True):
        c = by_style[q["style"]]
        c["n"] += 1
        if q["indexed"]:
            c["hit@1"] += int(r["ids"][:1] == [q["gold"]])
            c["hit@5"] += int(q["gold"] in r["ids"][:5])
            c["empty"] += int(not r["ids"])
            if q["gold"] not in r["ids"][:5] and len(misses) < 90:
                misses.append(
                    {
                        "style": q["style"],
                        "question": q["question"],
                        "gold": q["gold"],
                        "got": r["ids"][:3],
                        "reason": r["reason"][:200],
                    }
                )
        else:
            c["notice"] += int(not r["ids"] and r["notice"])
            c["empty"] += int(not r["ids"])
            if r["ids"] and len(misses) < 90:
                misses.append(
                    {
                        "style": q["style"],
                        "question": q["question"],
                        "company": q["company"],
                        "got": r["ids"][:3],
                        "reason": r["reason"][:200],
                    }
                )
    styles = {}
    for style, c in sorted(by_style.items()):
        n = c["n"]
        if style == "not indexed":
            styles[style] = {"n": n, "notice_rate": round(c["notice"] / n, 4), "empty_rate": round(c["empty"] / n, 4)}
        else:
            styles[style] = {
                "n": n,
                "doc_hit@1": round(c["hit@1"] / n, 4),
                "doc_hit@5": round(c["hit@5"] / n, 4),
                "empty_rate": round(c["empty"] / n, 4),
            }
    indexed = [s for k, s in styles.items() if k != "not indexed"]
    n_idx = sum(s["n"] for s in indexed)
    overall = {
        "n_indexed_questions": n_idx,
        "doc_hit@1": round(sum(s["doc_hit@1"] * s["n"] for s in indexed) / n_idx, 4),
        "doc_hit@5": round(sum(s["doc_hit@5"] * s["n"] for s in indexed) / n_idx, 4),
        "empty_results_indexed": round(sum(s["empty_rate"] * s["n"] for s in indexed)),
        "notice_rate_not_indexed": styles.get("not indexed", {}).get("notice_rate"),
        "startup_s": run["startup_s"],
        "per_question_ms": run["per_question_ms"],
    }
    return {"overall": overall, "by_style": styles, "misses": misses}


def scope_startup(store_path: str) -> dict[str, Any]:
    """Seconds for FilingScope's start in this process: open the Edge store, read every filing profile, build the
    company index (with the reference table and the alias file where the code has them)."""
    t0 = time.perf_counter()
    from haystack_fin.components.filing_scope import FilingScope
    from haystack_fin.document_stores.qdrant_edge.document_store import QdrantEdgeDocumentStore

    imported = time.perf_counter() - t0
    store = QdrantEdgeDocumentStore(path=store_path, index="haystack_fin", embedding_dim=384, return_embedding=True)
    t1 = time.perf_counter()
    scope = FilingScope(document_store=store, refresh_seconds=None)
    scope.warm_up()
    warm = time.perf_counter() - t1
    return {"import_s": round(imported, 3), "warm_up_s": round(warm, 3), "filings": len(scope.profiles)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--startup-store",
        default=None,
        help="an Edge store (e.g. bench_scale's N=5,000): time FilingScope's start on it, fresh process per run",
    )
    parser.add_argument("--startup-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--baseline-code", default=None, help="another checkout whose FilingScope is measured too")
    parser.add_argument("--data", default=None, help="(internal) run the scope of this checkout on a data JSON")
    args = parser.parse_args(argv)
    args.out = str(Path(args.out).resolve())  # the children run in the measured checkout's folder
    if args.startup_child:
        Path(args.out).write_text(json.dumps(scope_startup(args.startup_store)))
        return 0
    if args.startup_store:
        return startup_runs(args)
    if args.data:  # child: the scope of the code on sys.path
        data = json.loads(Path(args.data).read_text())
        Path(args.out).write_text(json.dumps(run_scope(data)))
        return 0
    rng = random.Random(SEED)
    data = build(rng)
    data_path = Path(args.out).with_suffix(".data.json")
    data_path.write_text(json.dumps(data, default=str))
    report: dict[str, Any] = {
        "store": {
            "filings": len(data["profiles"]),
            "real": sum(1 for p in data["profiles"] if p.get("real")),
            "clone_companies": N_CLONE_COMPANIES,
            "questions": len(data["questions"]),
        },
        "seed": SEED,
    }
    codes = {"this code": str(Path(__file__).resolve().parents[1])}
    if args.baseline_code:
        codes["baseline"] = args.baseline_code
    for label, code in codes.items():
        out = Path(args.out).with_suffix(f".{label.replace(' ', '_')}.run.json")
        env = {**os.environ, "PYTHONPATH": code, "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"}
        subprocess.run(
            [sys.executable, __file__, "--data", str(data_path), "--out", str(out)], check=True, env=env, cwd=code
        )
        report[label] = score(data, json.loads(out.read_text()))
        out.unlink()
    data_path.unlink()
    Path(args.out).write_text(json.dumps(report, indent=2))
    for label in codes:
        print(label, json.dumps(report[label]["overall"]))
        for style, s in report[label]["by_style"].items():
            print("   ", style.ljust(26), s)
    return 0


def startup_runs(args: argparse.Namespace, runs: int = 3) -> int:
    """FilingScope's start on ``--startup-store``, this code and ``--baseline-code`` alternating, fresh processes."""
    codes = {"this code": str(Path(__file__).resolve().parents[1])}
    if args.baseline_code:
        codes["baseline"] = args.baseline_code
    report: dict[str, Any] = {"store": args.startup_store, "runs": {label: [] for label in codes}}
    for _ in range(runs):
        for label, code in codes.items():
            out = Path(args.out).with_suffix(".startup.tmp.json")
            env = {**os.environ, "PYTHONPATH": code, "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"}
            cmd = [
                sys.executable,
                __file__,
                "--startup-child",
                "--startup-store",
                args.startup_store,
                "--out",
                str(out),
            ]
            subprocess.run(cmd, check=True, env=env, cwd=code)
            report["runs"][label].append(json.loads(out.read_text()))
            out.unlink()
    report["load_avg"] = round(os.getloadavg()[0], 2)
    for label, rows in report["runs"].items():
        report[label] = {"warm_up_s_median": sorted(r["warm_up_s"] for r in rows)[len(rows) // 2]}
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
