"""SEC Part/Item catalog and Item section detection over layout elements.

A filing's Items are found in four steps:
1. candidates: text elements that start with "Item <code>" (tolerating extraction glitches such as "I tem 7" or
   "Busines s.", and the suffixes "9A(T)", "4T", "9.01(d)") whose title matches a catalog title of that code, in
   the same element or the next one. "Condensed Consolidated Financial Statements" matches "Financial Statements"
   (qualifiers are skipped), and "Reserved" / "(Removed and Reserved)" matches any Item of that number (the
   Part heading above it decides between a 10-Q's Part I and Part II Item 4);
2. table-of-contents rejection: a candidate whose title is followed by a bare page number, and every candidate on a
   page dense with such lines, is a TOC line, never a section start;
3. list rejection: a run of candidates with almost no text between them (a Part divider page or a contents page
   without page numbers) whose Items appear again later, in order, as real sections, is a list: those entries
   are dropped. Short real sections several to a page ("Item 9B. Other Information / None.") are kept, because
   their Items do not come back;
4. ordering: the longest chain of candidates in catalog order and document order wins (dynamic programming), so a
   stray cross-reference that survived the steps above cannot reorder the filing.
The catalogs include the Items of older forms: a pre-2003 10-K's Item 14 (exhibits and reports on Form 8-K), a
pre-2004 10-Q's Part II titles, and the pre-August-2004 8-K Items 1-12 (stored under the number as filed, "9").
Documents without SEC Items (earnings releases, exhibits filed alone) are split by their top-level headings.
"""

import re
from bisect import bisect_right
from dataclasses import dataclass

from haystack_fin.core.ingest import cross_reference
from haystack_fin.core.ingest.cleanup import EXHIBIT_HEADING_LINE, is_page_number
from haystack_fin.core.ingest.layout import Element
from haystack_fin.core.retrieval.filing_profile import form_family
from haystack_fin.core.text import squash


@dataclass(frozen=True)
class ItemSpec:
    """One Item of a form: ``code`` is what the index stores ("7A", "I-2", "2.02"), ``number`` what the filing
    prints after "Item", ``titles`` the official title and common variants."""

    code: str
    number: str
    title: str
    part: str = ""
    variants: tuple[str, ...] = ()

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(squash(t) for t in (self.title, *self.variants))


ITEMS_10K: tuple[ItemSpec, ...] = (
    ItemSpec("1", "1", "Business", "I"),
    ItemSpec("1A", "1A", "Risk Factors", "I"),
    ItemSpec("1B", "1B", "Unresolved Staff Comments", "I"),
    ItemSpec("1C", "1C", "Cybersecurity", "I"),
    ItemSpec("2", "2", "Properties", "I"),
    ItemSpec("3", "3", "Legal Proceedings", "I"),
    ItemSpec("4", "4", "Mine Safety Disclosures", "I", ("Submission of Matters to a Vote of Security Holders",)),
    ItemSpec(
        "5",
        "5",
        "Market for Registrant's Common Equity, Related Stockholder Matters and Issuer Purchases of Equity Securities",
        "II",
    ),
    ItemSpec("6", "6", "Selected Financial Data", "II", ("[Reserved]", "Reserved", "Removed and Reserved")),
    ItemSpec("7", "7", "Management's Discussion and Analysis of Financial Condition and Results of Operations", "II"),
    ItemSpec("7A", "7A", "Quantitative and Qualitative Disclosures About Market Risk", "II"),
    ItemSpec("8", "8", "Financial Statements and Supplementary Data", "II", ("Financial Statements",)),
    ItemSpec("9", "9", "Changes in and Disagreements with Accountants on Accounting and Financial Disclosure", "II"),
    ItemSpec("9A", "9A", "Controls and Procedures", "II"),
    ItemSpec("9B", "9B", "Other Information", "II"),
    ItemSpec("9C", "9C", "Disclosure Regarding Foreign Jurisdictions that Prevent Inspections", "II"),
    ItemSpec("10", "10", "Directors, Executive Officers and Corporate Governance", "III"),
    ItemSpec("11", "11", "Executive Compensation", "III"),
    ItemSpec(
        "12",
        "12",
        "Security Ownership of Certain Beneficial Owners and Management and Related Stockholder Matters",
        "III",
    ),
    ItemSpec("13", "13", "Certain Relationships and Related Transactions, and Director Independence", "III"),
    ItemSpec("14", "14", "Principal Accountant Fees and Services", "III", ("Principal Accounting Fees and Services",)),
    # Before 2003 Item 14 was Part IV's exhibits Item (fees did not exist; exhibits moved to Item 15 in 2003).
    ItemSpec("14", "14", "Exhibits, Financial Statement Schedules and Reports on Form 8-K", "IV"),
    ItemSpec("15", "15", "Exhibits and Financial Statement Schedules", "IV", ("Exhibits, Financial Statement",)),
    ItemSpec("16", "16", "Form 10-K Summary", "IV"),
)

ITEMS_10Q: tuple[ItemSpec, ...] = (
    ItemSpec("I-1", "1", "Financial Statements", "I"),
    ItemSpec("I-2", "2", "Management's Discussion and Analysis of Financial Condition and Results of Operations", "I"),
    ItemSpec("I-3", "3", "Quantitative and Qualitative Disclosures About Market Risk", "I"),
    ItemSpec("I-4", "4", "Controls and Procedures", "I"),
    ItemSpec("II-1", "1", "Legal Proceedings", "II"),
    ItemSpec("II-1A", "1A", "Risk Factors", "II"),
    ItemSpec(
        "II-2", "2", "Unregistered Sales of Equity Securities and Use of Proceeds", "II", ("Changes in Securities",)
    ),
    ItemSpec("II-3", "3", "Defaults Upon Senior Securities", "II"),
    ItemSpec("II-4", "4", "Mine Safety Disclosures", "II", ("Submission of Matters to a Vote of Security Holders",)),
    ItemSpec("II-5", "5", "Other Information", "II"),
    ItemSpec("II-6", "6", "Exhibits", "II"),
)

# 8-K Items before August 23, 2004 (numbered 1-12), stored under the number as filed. They come first in the
# catalog: a filing uses one numbering or the other, and "Item 9" can never be mistaken for "Item 9.01".
_ITEMS_8K_BEFORE_2004: tuple[ItemSpec, ...] = (
    ItemSpec("1", "1", "Changes in Control of Registrant"),
    ItemSpec("2", "2", "Acquisition or Disposition of Assets"),
    ItemSpec("3", "3", "Bankruptcy or Receivership"),
    ItemSpec("4", "4", "Changes in Registrant's Certifying Accountant"),
    ItemSpec("5", "5", "Other Events", variants=("Other Events and Regulation FD Disclosure",)),
    ItemSpec("6", "6", "Resignations of Registrant's Directors"),
    ItemSpec("7", "7", "Financial Statements and Exhibits", variants=("Exhibits",)),  # "Item 7(c). Exhibits"
    ItemSpec("8", "8", "Change in Fiscal Year"),
    ItemSpec("9", "9", "Regulation FD Disclosure"),
    ItemSpec(
        "10", "10", "Amendments to the Registrant's Code of Ethics, or Waiver of a Provision of the Code of Ethics"
    ),
    ItemSpec("11", "11", "Temporary Suspension of Trading Under Registrant's Employee Benefit Plans"),
    ItemSpec("12", "12", "Results of Operations and Financial Condition"),
)

# What each pre-2004 8-K Item became in the August 2004 numbering (SEC Release 33-8400), so that retrieval rules
# written for current Items ("2.02": results) also fit filings stored under the old numbers ("12").
ITEMS_8K_SUCCESSOR: dict[str, str] = {
    "1": "5.01",
    "2": "2.01",
    "3": "1.03",
    "4": "4.01",
    "5": "8.01",
    "6": "5.02",
    "7": "9.01",
    "8": "5.03",
    "9": "7.01",
    "10": "5.05",
    "11": "5.04",
    "12": "2.02",
}
ITEMS_8K_PREDECESSOR: dict[str, str] = {new: old for old, new in ITEMS_8K_SUCCESSOR.items()}


ITEMS_8K: tuple[ItemSpec, ...] = _ITEMS_8K_BEFORE_2004 + tuple(
    ItemSpec(code, code, title, variants=tuple(variants))
    for code, title, *variants in (
        ("1.01", "Entry into a Material Definitive Agreement"),
        ("1.02", "Termination of a Material Definitive Agreement"),
        ("1.03", "Bankruptcy or Receivership"),
        ("1.04", "Mine Safety - Reporting of Shutdowns and Patterns of Violations"),
        ("1.05", "Material Cybersecurity Incidents"),
        ("2.01", "Completion of Acquisition or Disposition of Assets"),
        ("2.02", "Results of Operations and Financial Condition"),
        ("2.03", "Creation of a Direct Financial Obligation"),
        ("2.04", "Triggering Events That Accelerate or Increase a Direct Financial Obligation"),
        ("2.05", "Costs Associated with Exit or Disposal Activities"),
        ("2.06", "Material Impairments"),
        ("3.01", "Notice of Delisting or Failure to Satisfy a Continued Listing Rule or Standard"),
        ("3.02", "Unregistered Sales of Equity Securities"),
        ("3.03", "Material Modification to Rights of Security Holders"),
        ("4.01", "Changes in Registrant's Certifying Accountant"),
        ("4.02", "Non-Reliance on Previously Issued Financial Statements"),
        ("5.01", "Changes in Control of Registrant"),
        ("5.02", "Departure of Directors or Certain Officers"),
        ("5.03", "Amendments to Articles of Incorporation or Bylaws"),
        ("5.04", "Temporary Suspension of Trading Under Registrant's Employee Benefit Plans"),
        ("5.05", "Amendments to the Registrant's Code of Ethics"),
        ("5.06", "Change in Shell Company Status"),
        ("5.07", "Submission of Matters to a Vote of Security Holders"),
        ("5.08", "Shareholder Director Nominations"),
        ("6.01", "ABS Informational and Computational Material"),
        ("7.01", "Regulation FD Disclosure"),
        ("8.01", "Other Events"),
        ("9.01", "Financial Statements and Exhibits", "Exhibits"),  # "ITEM 9.01(d). Exhibits"
    )
)

CATALOGS: dict[str, tuple[ItemSpec, ...]] = {"10-K": ITEMS_10K, "10-Q": ITEMS_10Q, "8-K": ITEMS_8K}

COVER_CODE = "cover"
EXHIBIT_PREFIX = "EX-"  # item codes of exhibit sections: "EX-99.1" (8-K), "EX-10.2" (filed with a 10-K)
COVER_TITLE = "Cover page and table of contents"

# "Item 7A.", "PART II, ITEM 5 -", "ITEM 9A(T)." (smaller companies 2007-2009), "Item 4T.", "ITEM 9.01(d). Exhibits".
# Matched against an element's first 400 characters only.
_ITEM_START = re.compile(
    r"^\s*(?:PART\s+(?P<part>IV|I{1,3})\b[\s,.:;\-–—]*)?"
    r"I\s?T\s?E\s?M\s*(?P<num>\d{1,2}(?:\.\d{2})?)\s*(?P<letter>[A-C](?![a-z]))?"
    r"(?:\(T\)|T(?![a-z]))?(?:\([a-z]\))?"
    r"(?:\s*[.:;\-–—]+\s*|\s+|$)(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_PART_HEADING = re.compile(r"^\s*PART\s+(IV|I{1,3})\b\s*+(?:[.:\-–—]\s*+)?(.{0,60})$", re.IGNORECASE)
# Matched only against a line's last few characters (see ``ends_with_page_number``).
_PAGE_TAIL = re.compile(r"(?:[A-Z]-)?\d{1,3}\Z")
_EXHIBIT_HEADING = re.compile(r"^\s*(?:EX(?:HIBIT)?[\s\-]*)(\d{1,3}(?:\.\d{1,2})?)\s*$", re.IGNORECASE)
# A 10-K's or 10-Q's filed exhibits follow its signatures, each headed "Exhibit 21.1", "Exhibit 10.2(1)",
# "EXHIBIT 31.1 CERTIFICATION ...", "EX-23": the number (and a sub-number in parentheses) must open the line.
_FILED_EXHIBIT = EXHIBIT_HEADING_LINE
_SIGNATURES = re.compile(r"^\s*SIGNATURES?:?\s*$", re.IGNORECASE)
_EXHIBIT_LINE_CHARS = 160  # a heading, not a sentence that cites an exhibit
_MIN_TITLE_MATCH = 7
# Words filings put before a catalog title ("Item 1. Condensed Consolidated Financial Statements"), matched on the
# squashed title (letters and digits only).
_TITLE_QUALIFIERS = re.compile(r"(?:unaudited|condensed|consolidated|combined|interim)+")
# "Item 4. Reserved", "ITEM 6. [RESERVED]", "Item 4. (Removed and Reserved)": the Item exists, its title does not.
_RESERVED_KEYS = ("removedandreserved", "reserved")
# Many 10-Ks put the audited statements on F-pages after Item 15/16 and make Item 8 a one-line pointer to them.
_STATEMENTS_START = re.compile(
    r"(?:^|\b(?:inc|corp|corporation|company|ltd|llc|plc|co)\.?\s+)"  # "NETFLIX, INC. INDEX TO ..."
    r"(index to (the )?(consolidated )?financial statements|report of independent registered public accounting"
    r" firm|report of independent (auditors|accountants|public accountants)|independent auditors'? report"
    r"|consolidated (balance sheets?|statements? of (operations|income|earnings)))\b",
    re.IGNORECASE,
)
# "... (page 48)", "(pages 52 through 121)": a line of Item 15's list of statements, not the statements.
_PAGE_REFERENCE = re.compile(r"\(pages?\s+[A-Z]?-?\d", re.IGNORECASE)
# Any statement's name, to tell a list of them ("Consolidated Balance Sheets" / "Consolidated Statements of Cash
# Flows" / "Notes to ...") from a statement's heading followed by its text.
_STATEMENT_NAME = re.compile(
    r"\A\s*(?:(?:consolidated|combined|condensed)\s+)*(?:balance\s+sheets?|statements?\s+of\s+\w|notes\s+to\s"
    r"|report\s+of\s+independent|independent\s+auditors|index\s+to\s|schedule\s+[ivx]+\b)",
    re.IGNORECASE,
)
_INDEX_HEADING = re.compile(r"\bindex\s+to\b", re.IGNORECASE)
_SCHEDULE_REPORT = re.compile(r"financial\s+statement\s+schedules?\b", re.IGNORECASE)
# The statements start on a new page: at most a running head ("NETFLIX, INC.") above their first heading.
_PAGE_TOP_WORDS = 12
# A list entry (divider page, contents page without page numbers) is followed by at most a few short lines (a Part
# heading, the names of the statements) before the next entry; a real section by prose, a table, or nothing.
_LIST_LINE_WORDS = 15
_LIST_GAP_WORDS = 40
_ITEM8_STUB_PAGES = 2
# Item headings that leave more than this share of a 10-K's pages before the first Item: look for a cross-reference
# index (an annual-report-style 10-K names its Items only there).
_MAX_COVER_SHARE = 0.5


def catalog_family(form: str) -> str:
    """The form's family (``filing_profile.form_family``) when it has an Item catalog ("10-K/A" -> "10-K"), else
    "" (earnings releases, other documents)."""
    family = form_family(form)
    return family if family in CATALOGS else ""


@dataclass
class Section:
    """A contiguous run of elements ``[start, end)`` belonging to one Item (or one top-level heading)."""

    item: str
    title: str
    part: str
    start: int
    end: int
    start_page: int = 0
    end_page: int = 0
    heading_text: str = ""


@dataclass
class _Candidate:
    index: int
    spec: ItemSpec
    title_end: str  # text after the matched title, to spot TOC page numbers
    page: int
    quality: float = 1.0
    title_in_next: bool = False
    extra_words: int = 0  # words of the heading element(s) beyond "Item N." and the matched title


def _title_keys(text: str) -> tuple[str, str]:
    """The squashed start of ``text`` as written and with leading qualifiers ("condensedconsolidated") skipped."""
    key = squash(text[:300])
    m = _TITLE_QUALIFIERS.match(key)
    return key[:40], (key[m.end() :] if m else key)[:40]


def _title_match(keys: tuple[str, str], spec: ItemSpec) -> tuple[int, str]:
    """Longest common prefix (letters and digits only) of the heading's keys and a title of ``spec``, and that title.

    A "Reserved" heading matches every Item (the caller tells them apart by Part).
    """
    best, best_title = 0, ""
    for title, ref in zip((spec.title, *spec.variants), spec.keys, strict=True):
        for key in keys:
            n = 0
            for a, b in zip(key, ref, strict=False):
                if a != b:
                    break
                n += 1
            if n >= min(len(ref), _MIN_TITLE_MATCH) and n > best:
                best, best_title = n, title
    if best == 0:
        for reserved in _RESERVED_KEYS:
            if keys[0].startswith(reserved):
                return len(reserved), "Reserved" if reserved == "reserved" else "Removed and Reserved"
    return best, best_title


def _item_number(match: re.Match[str]) -> str:
    return match.group("num") + (match.group("letter") or "").upper()


def _candidates(elements: list[Element], catalog: tuple[ItemSpec, ...]) -> list[_Candidate]:
    by_number: dict[str, list[ItemSpec]] = {}
    for spec in catalog:
        by_number.setdefault(spec.number, []).append(spec)
    found: list[_Candidate] = []
    part = ""  # the Part heading above: decides between Items of one number and one score ("Item 4. Reserved")
    for i, el in enumerate(elements):
        if el.kind != "text":
            continue
        m = _ITEM_START.match(el.text[:400])
        if not m:
            part = part_of(el.text[:100]) or part
            continue
        part = (m.group("part") or part).upper()
        specs = by_number.get(_item_number(m))
        if not specs:
            continue
        rest = m.group("rest").strip()
        source, in_next = rest, False
        if len(squash(rest)) < 3 and i + 1 < len(elements) and elements[i + 1].kind == "text":
            source, in_next = elements[i + 1].text, True  # "Item 7." on its own line, title on the next
        keys = _title_keys(source)
        scored = [(spec, *_title_match(keys, spec)) for spec in specs]
        top = max(score for _, score, _ in scored)
        if top == 0:
            continue
        tied = [(spec, title) for spec, score, title in scored if score == top]
        spec, title = next(((s, t) for s, t in tied if s.part == part), tied[0])
        quality = 1.0 + 0.2 * (el.bold or el.is_heading) + 0.1 * (len(el.text.split()) <= 30)
        extra = max(0, len(source[:2000].split()) - len(title.split()))
        found.append(_Candidate(i, spec, source, el.page, quality, in_next, extra))
    return found


def ends_with_page_number(text: str) -> bool:
    r"""A title followed by a page number: "... Operations 25", "... Statements .......... F-1", "Risk Factors…12".

    Constant time in the line's length. The regular expression this replaces, ``(?:\s|\.{2,}|…)+\d{1,3}\s*$``,
    could split a run of dots among its repetitions in exponentially many ways, so a dot leader that did not end
    in a number hung the indexer.
    """
    tail = text.rstrip()
    m = _PAGE_TAIL.search(tail, max(0, len(tail) - 5))
    if m is None or m.start() == 0:
        return False
    before = tail[: m.start()]
    return before[-1].isspace() or before[-1] == "…" or before.endswith("..")


def _toc_like(c: _Candidate, elements: list[Element]) -> bool:
    """A TOC line: its title is followed by a page number, in the same element or as the next element."""
    if ends_with_page_number(c.title_end) and len(c.title_end.split()) <= 25:
        return True  # "Item 7. Management's Discussion ... 25"
    after = c.index + (2 if c.title_in_next else 1)
    return after < len(elements) and is_page_number(elements[after].text) and elements[after].kind == "text"


def _reject_toc(candidates: list[_Candidate], elements: list[Element]) -> list[_Candidate]:
    """Drop TOC lines, and every candidate on a page where most candidates are TOC lines.

    Short real sections ("Item 9B. Other Information" / "None.") sit several to a page too; what tells a TOC
    apart is the page number after each title, not the amount of text between entries.
    """
    by_page: dict[int, list[_Candidate]] = {}
    for c in candidates:
        by_page.setdefault(c.page, []).append(c)
    toc_pages = {
        page
        for page, cands in by_page.items()
        if len(cands) >= 3 and 2 * sum(_toc_like(c, elements) for c in cands) >= len(cands)
    }
    return [c for c in candidates if c.page not in toc_pages and not _toc_like(c, elements)]


def _gap_is_list(c: _Candidate, nxt: _Candidate, elements: list[Element]) -> bool:
    """Between ``c`` and the next candidate only a few short lines: ``c`` reads as a list entry, not a section."""
    total = c.extra_words
    if total > _LIST_LINE_WORDS:
        return False
    for el in elements[c.index + 1 + c.title_in_next : nxt.index]:
        if el.kind == "table":
            return False
        if el.kind != "text":
            continue
        words = len(el.text.split())
        total += words
        if words > _LIST_LINE_WORDS or total > _LIST_GAP_WORDS:
            return False
    return True


def _reject_lists(candidates: list[_Candidate], elements: list[Element]) -> list[_Candidate]:
    """Drop the entries of Item lists: Part divider pages and contents pages that print no page numbers.

    A run of candidates with only a few short lines between them is a list when at least two of its Items appear
    again later, in order, as sections (candidates followed by real text); those entries are dropped, the real
    headings stay. Short real sections several to a page ("Item 9B. Other Information" / "None.") form such runs
    too, but their Items do not come back, so they are kept. Only section-like candidates count as coming back,
    so a cross-reference index at the end of a filing cannot make the real sections look like a list.
    """
    n = len(candidates)
    listy = [k + 1 < n and _gap_is_list(candidates[k], candidates[k + 1], elements) for k in range(n)]
    sections: dict[ItemSpec, list[int]] = {}
    for k, c in enumerate(candidates):
        if not listy[k]:
            sections.setdefault(c.spec, []).append(k)
    rejected: set[int] = set()
    k = 0
    while k < n:
        end = k
        while listy[end]:  # the last candidate of a run is never listy
            end += 1
        if end > k:
            matched, cursor = [], k
            for member in range(k, end + 1):
                later = sections.get(candidates[member].spec, [])
                pos = bisect_right(later, max(member, cursor))
                if pos < len(later):
                    matched.append(member)
                    cursor = later[pos]
            if len(matched) >= 2:
                rejected.update(matched)
        k = end + 1
    return [c for k, c in enumerate(candidates) if k not in rejected]


def _best_chain(candidates: list[_Candidate], catalog: tuple[ItemSpec, ...]) -> list[_Candidate]:
    """Highest-quality chain strictly increasing in catalog order (candidates are in document order).

    O(candidates x catalog): for each catalog position the best chain ending there so far, instead of comparing
    every pair of candidates (a 1,000-page filing can hold thousands of "Item" lines). Ties go to the earliest
    candidate, as a scan over all earlier candidates would.
    """
    order = {spec: k for k, spec in enumerate(catalog)}
    n = len(candidates)
    if not n:
        return []
    best = [c.quality for c in candidates]
    back = [-1] * n
    # ending[k]: (best chain value, candidate) over the candidates seen so far at catalog position k
    ending: list[tuple[float, int] | None] = [None] * len(catalog)
    for j, c in enumerate(candidates):
        oj = order[c.spec]
        prev = max((e for e in ending[:oj] if e is not None), key=lambda e: (e[0], -e[1]), default=None)
        if prev is not None:
            best[j] = prev[0] + c.quality
            back[j] = prev[1]
        current = ending[oj]
        if current is None or best[j] > current[0]:
            ending[oj] = (best[j], j)
    j = max(range(n), key=lambda k: (best[k], k))
    chain = []
    while j >= 0:
        chain.append(candidates[j])
        j = back[j]
    return chain[::-1]


def _page_span(elements: list[Element], start: int, end: int) -> tuple[int, int]:
    pages = [p for el in elements[start:end] for p in el.pages]
    return (min(pages), max(pages)) if pages else (0, 0)


def _statement_heading(el: Element) -> str:
    # The statements' first heading may have become a table's caption ("Index to Financial Statements").
    head = el.text if el.kind == "text" else (el.table.title if el.table is not None else "")
    return head if len(head) <= 120 and _STATEMENTS_START.search(head[:80]) else ""


def _is_statement_list_line(elements: list[Element], i: int, head: str) -> bool:
    """A line of a list of statements (Item 15(a), an index), or the auditor's report on the schedules."""
    if ends_with_page_number(head) or _PAGE_REFERENCE.search(head):
        return True  # "Consolidated Balance Sheets F-3", "... (page 48)"
    index = _INDEX_HEADING.search(head[:80]) is not None  # "INDEX TO ... STATEMENTS AND FINANCIAL STATEMENT SCHEDULE"
    if not index and _SCHEDULE_REPORT.search(head):
        return True  # "Report of ... Firm on Financial Statement Schedule": Item 15(a)(2), not Item 8
    nxt = elements[i + 1] if i + 1 < len(elements) else None
    if nxt is None or nxt.kind != "text":
        return False
    if is_page_number(nxt.text):
        return True
    if index:
        return False  # an index's heading is followed by the statements' names: it is where they start
    # "REPORT OF ... FIRM" / "ON FINANCIAL STATEMENT SCHEDULE", or one name of a list followed by the next name
    return bool(_SCHEDULE_REPORT.search(nxt.text[:60]) or _STATEMENT_NAME.match(nxt.text[:80]))


def _statements_start(elements: list[Element], first: int) -> tuple[int, str] | None:
    """Where the F-pages after the last Item begin: the first statements heading at the top of a page.

    Item 15's list of the statements ("Report of Independent ... (pages 44 through 45)", "Consolidated Balance
    Sheets") also reads like their headings, but sits in the middle of a page and is followed by more names;
    only a bold text heading elsewhere on a page is used when no page starts with one (a table captioned like a
    statement in the middle of a page can be that list).
    """
    fallback: tuple[int, str] | None = None
    page, words_above = -1, 0
    for i in range(first, len(elements)):
        el = elements[i]
        if el.page != page:
            page, words_above = el.page, 0
        head = _statement_heading(el)
        if head and not _is_statement_list_line(elements, i, head):
            if words_above <= _PAGE_TOP_WORDS:
                return i, head
            if fallback is None and el.kind == "text" and (el.bold or el.is_heading):
                fallback = (i, head)
        if el.kind == "text":
            words_above += len(el.text.split())
        elif el.kind == "table":
            words_above += _PAGE_TOP_WORDS + 1  # a table above: not the top of the page (a logo image is)
    return fallback


def _filed_exhibit_starts(elements: list[Element], first: int, after: int) -> list[tuple[int, str, str, str, str]]:
    """The exhibits filed with a 10-K or 10-Q, after its signatures: one section "EX-<number>" per exhibit heading
    at the top of a page (``_PAGE_TOP_WORDS``). Exhibits are not the report (contracts, plans, indentures,
    consents, certifications; hundreds of pages in some 10-Ks), so they get their own sections instead of
    lengthening the last Item. Nothing is found before a "SIGNATURES" heading, so that the exhibit index of Item
    15 ("Exhibit 10.1 Credit Agreement ...") never starts one; signatures are looked for from ``first`` (after the
    last Item's heading), exhibits only after ``after`` (the last section start: F-pages placed after the
    signatures stay Item 8). One pass over ``elements``.
    """
    starts: list[tuple[int, str, str, str, str]] = []
    signed = False
    page, words_above = -1, 0
    for i in range(first, len(elements)):
        el = elements[i]
        if el.page != page:
            page, words_above = el.page, 0
        if el.kind == "text":
            text = el.text
            if not signed:
                signed = len(text) <= 20 and _SIGNATURES.match(text) is not None
            elif i > after and words_above <= _PAGE_TOP_WORDS and len(text) <= _EXHIBIT_LINE_CHARS:
                m = _FILED_EXHIBIT.match(text)
                if m and (not starts or starts[-1][1] != f"{EXHIBIT_PREFIX}{m.group(1)}"):
                    starts.append((i, f"{EXHIBIT_PREFIX}{m.group(1)}", f"Exhibit {m.group(1)}", "", text[:200]))
            words_above += len(text.split())
        elif el.kind == "table":
            words_above += _PAGE_TOP_WORDS + 1
    return starts


def _include_part_heading(elements: list[Element], index: int) -> int:
    """Move an Item's start back over a "PART II" heading that directly precedes it."""
    if index > 0 and elements[index - 1].kind == "text" and part_of(elements[index - 1].text) is not None:
        return index - 1
    return index


def detect_item_sections(
    elements: list[Element], form: str, raw_elements: list[Element] | None = None
) -> list[Section]:
    """Split ``elements`` into Item sections for a 10-K, 10-Q or 8-K.

    Text before the first Item is the "cover" section. For an 8-K, exhibits after the last Item that start with
    an "Exhibit 99.1" heading become their own sections ("EX-99.1"), and so do a 10-K's or 10-Q's exhibits after
    its signatures (``_filed_exhibit_starts``). For a 10-K whose Item 8 is a short pointer
    to F-pages placed after the last Item, those pages form a second Item "8" section. Returns [] when no Item
    is found or the form has no Item catalog; callers then fall back to ``detect_heading_sections``.

    A 10-K whose Item headings leave most of its pages in the cover section is read by its "Form 10-K
    Cross-Reference Index" instead (``cross_reference``), when it has one; ``raw_elements`` (the elements before
    page furniture was removed) give the printed page numbers the index cites.
    """
    sections = _heading_item_sections(elements, form)
    if catalog_family(form) == "10-K" and raw_elements is not None and _mostly_cover(sections, elements):
        return _cross_reference_sections(elements, raw_elements) or sections
    return sections


def _mostly_cover(sections: list[Section], elements: list[Element]) -> bool:
    pages = {p for el in elements for p in el.pages}
    cover = {p for s in sections if s.item == COVER_CODE for el in elements[s.start : s.end] for p in el.pages}
    return not sections or len(cover) > _MAX_COVER_SHARE * len(pages)


def _cross_reference_sections(elements: list[Element], raw_elements: list[Element]) -> list[Section]:
    """Sections from the filing's cross-reference index ([] without a usable one): each run of pages the index
    gives one Item; the filed exhibits after the signatures get their own sections as in any 10-K."""
    index = cross_reference.find_index(elements)
    offset = cross_reference.printed_page_offset(raw_elements) if index else None
    if offset is None:
        return []
    specs = {spec.number: spec for spec in ITEMS_10K}
    starts: list[tuple[int, str, str, str, str]] = []
    for start, number in cross_reference.item_runs(elements, cross_reference.page_items(index, offset)):
        spec = specs.get(number) if number is not None else None
        if spec is not None:
            starts.append((start, spec.code, spec.title, spec.part, elements[start].text[:200]))
        elif not starts:  # the pages before the first one the index cites
            starts.append((start, COVER_CODE, COVER_TITLE, "", ""))
    exhibits = _filed_exhibit_starts(elements, 0, max(s[0] for s in starts))
    if exhibits:
        starts = [s for s in starts if s[0] < exhibits[0][0]] + exhibits
    return _sections(elements, starts)


def _sections(elements: list[Element], starts: list[tuple[int, str, str, str, str]]) -> list[Section]:
    sections = []
    for k, (start, code, title, part, heading) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(elements)
        first, last = _page_span(elements, start, end)
        sections.append(Section(code, title, part, start, end, first, last, heading))
    return sections


def _heading_item_sections(elements: list[Element], form: str) -> list[Section]:
    """``detect_item_sections`` from the filing's "Item" headings."""
    family = catalog_family(form)
    if not family or not elements:
        return []
    catalog = CATALOGS[family]
    candidates = _reject_lists(_reject_toc(_candidates(elements, catalog), elements), elements)
    chain = _best_chain(candidates, catalog)
    if not chain:
        return []
    starts: list[tuple[int, str, str, str, str]] = []
    chain_starts = [_include_part_heading(elements, c.index) for c in chain]
    if chain_starts[0] > 0:
        starts.append((0, COVER_CODE, COVER_TITLE, "", ""))
    for c, start in zip(chain, chain_starts, strict=True):
        starts.append((start, c.spec.code, c.spec.title, c.spec.part, elements[c.index].text[:200]))
    item8 = next((c for c in chain if c.spec.code == "8"), None)
    if family == "10-K" and item8 is not None and item8 is not chain[-1]:
        stub_end = chain[chain.index(item8) + 1].index
        stub_pages = elements[stub_end - 1].page - elements[item8.index].page + 1
        if stub_pages <= _ITEM8_STUB_PAGES:
            found = _statements_start(elements, chain[-1].index + 1)
            if found is not None:
                starts.append((found[0], "8", item8.spec.title, item8.spec.part, found[1]))
    if family in ("10-K", "10-Q"):
        starts.extend(_filed_exhibit_starts(elements, chain[-1].index + 1, max(s[0] for s in starts)))
    if family == "8-K":
        for i in range(chain[-1].index + 1, len(elements)):
            el = elements[i]
            m = _EXHIBIT_HEADING.match(el.text) if el.kind == "text" else None
            if m and starts[-1][1] != f"{EXHIBIT_PREFIX}{m.group(1)}":  # the same heading on its next page
                starts.append((i, f"{EXHIBIT_PREFIX}{m.group(1)}", f"Exhibit {m.group(1)}", "", el.text))
    return _sections(elements, starts)


def _heading_style(el: Element) -> tuple[float, bool, bool]:
    letters = [c for c in el.text if c.isalpha()]
    caps = bool(letters) and sum(c.isupper() for c in letters) >= 0.8 * len(letters)
    return (round(el.font_size), caps, el.bold)


def detect_heading_sections(elements: list[Element], max_sections: int = 40) -> list[Section]:
    """Split a document without SEC Items by its top-level headings into sections "S1", "S2", ...

    The top level is the largest heading style that yields at least two sections and at most ``max_sections``;
    without one, the whole document is one section titled by its first heading.
    """
    if not elements:
        return []
    headings = [i for i, el in enumerate(elements) if el.kind == "text" and el.is_heading]
    styles = sorted({_heading_style(elements[i]) for i in headings}, reverse=True)
    chosen: list[int] = []
    for style in styles:
        idx = [i for i in headings if _heading_style(elements[i]) >= style]
        if 2 <= len(idx) <= max_sections:
            chosen = idx
            break
    if not chosen or chosen[0] != 0:
        chosen = [0, *chosen]
    sections = []
    for k, start in enumerate(chosen):
        end = chosen[k + 1] if k + 1 < len(chosen) else len(elements)
        first, last = _page_span(elements, start, end)
        head = elements[start].text if elements[start].kind == "text" else ""
        title = " ".join(head.split()[:16]) if head else f"Section {k + 1}"
        sections.append(Section(f"S{k + 1}", title, "", start, end, first, last, head))
    return sections


def part_of(text: str) -> str | None:
    """ "PART II — OTHER INFORMATION" -> "II"; None if ``text`` is not a Part heading."""
    m = _PART_HEADING.match(text)
    return m.group(1).upper() if m else None
