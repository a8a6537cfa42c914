"""SEC Part/Item catalog and Item section detection over layout elements.

A filing's Items are found in three steps:
1. candidates: text elements that start with "Item <code>" (tolerating extraction glitches such as "I tem 7" or
   "Busines s.") whose title matches the catalog title of that code, in the same element or the next one;
2. table-of-contents rejection: a candidate whose title is followed by a bare page number, and every candidate on a
   page dense with candidates and little text between them, is a TOC line, never a section start;
3. ordering: the longest chain of candidates in catalog order and document order wins (dynamic programming), so a
   stray cross-reference that survived step 1 cannot reorder the filing.
Documents without SEC Items (earnings releases, exhibits filed alone) are split by their top-level headings.
"""

import re
from dataclasses import dataclass

from haystack_fin.core.layout import Element
from haystack_fin.core.page_cleanup import is_page_number
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
    ItemSpec("II-2", "2", "Unregistered Sales of Equity Securities and Use of Proceeds", "II"),
    ItemSpec("II-3", "3", "Defaults Upon Senior Securities", "II"),
    ItemSpec("II-4", "4", "Mine Safety Disclosures", "II"),
    ItemSpec("II-5", "5", "Other Information", "II"),
    ItemSpec("II-6", "6", "Exhibits", "II"),
)

ITEMS_8K: tuple[ItemSpec, ...] = tuple(
    ItemSpec(code, code, title)
    for code, title in (
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
        ("9.01", "Financial Statements and Exhibits"),
    )
)

CATALOGS: dict[str, tuple[ItemSpec, ...]] = {"10-K": ITEMS_10K, "10-Q": ITEMS_10Q, "8-K": ITEMS_8K}

COVER_CODE = "cover"
COVER_TITLE = "Cover page and table of contents"

_ITEM_START = re.compile(
    r"^\s*(?:PART\s+(?P<part>IV|I{1,3})\b[\s,.:;\-–—]*)?"
    r"I\s?T\s?E\s?M\s*(?P<num>\d{1,2}(?:\.\d{2})?)\s*(?P<letter>[A-C](?![a-z]))?"
    r"\s*(?:[.:;\-–—]+\s*|\s+|$)(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_PART_HEADING = re.compile(r"^\s*PART\s+(IV|I{1,3})\b(?:\s*[.:\-–—]?\s*)(.{0,60})$", re.IGNORECASE)
# Matched only against a line's last few characters (see ``ends_with_page_number``).
_PAGE_TAIL = re.compile(r"(?:[A-Z]-)?\d{1,3}\Z")
_EXHIBIT_HEADING = re.compile(r"^\s*(?:EX(?:HIBIT)?[\s\-]*)(\d{1,3}(?:\.\d{1,2})?)\s*$", re.IGNORECASE)
_MIN_TITLE_MATCH = 7
# Many 10-Ks put the audited statements on F-pages after Item 15/16 and make Item 8 a one-line pointer to them.
_STATEMENTS_START = re.compile(
    r"(?:^|\b(?:inc|corp|corporation|company|ltd|llc|plc|co)\.?\s+)"  # "NETFLIX, INC. INDEX TO ..."
    r"(index to (the )?(consolidated )?financial statements|report of independent registered public accounting"
    r" firm|consolidated (balance sheets?|statements? of (operations|income|earnings)))\b",
    re.IGNORECASE,
)
_ITEM8_STUB_PAGES = 2


def form_family(form: str) -> str:
    """ "10-K/A" -> "10-K"; anything without an Item catalog -> ""."""
    base = form.upper().split("/")[0].strip()
    return base if base in CATALOGS else ""


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


def _title_match(text: str, spec: ItemSpec) -> int:
    """Length of the longest common prefix (letters and digits only) between ``text`` and a title of ``spec``."""
    key = squash(text)[:40]
    best = 0
    for ref in spec.keys:
        n = 0
        for a, b in zip(key, ref, strict=False):
            if a != b:
                break
            n += 1
        if n >= min(len(ref), _MIN_TITLE_MATCH):
            best = max(best, n)
    return best


def _item_number(match: re.Match[str]) -> str:
    return match.group("num") + (match.group("letter") or "").upper()


def _candidates(elements: list[Element], catalog: tuple[ItemSpec, ...]) -> list[_Candidate]:
    by_number: dict[str, list[ItemSpec]] = {}
    for spec in catalog:
        by_number.setdefault(spec.number, []).append(spec)
    found: list[_Candidate] = []
    for i, el in enumerate(elements):
        if el.kind != "text":
            continue
        m = _ITEM_START.match(el.text[:400])
        if not m:
            continue
        specs = by_number.get(_item_number(m))
        if not specs:
            continue
        rest = m.group("rest").strip()
        source, in_next = rest, False
        if len(squash(rest)) < 3 and i + 1 < len(elements) and elements[i + 1].kind == "text":
            source, in_next = elements[i + 1].text, True  # "Item 7." on its own line, title on the next
        scored = [(spec, _title_match(source, spec)) for spec in specs]
        spec, score = max(scored, key=lambda s: s[1])
        if score == 0:
            continue
        quality = 1.0 + 0.2 * (el.bold or el.is_heading) + 0.1 * (len(el.text.split()) <= 30)
        found.append(_Candidate(i, spec, source, el.page, quality, in_next))
    return found


def ends_with_page_number(text: str) -> bool:
    """A title followed by a page number: "... Operations 25", "... Statements .......... F-1", "Risk Factors…12".

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


def _best_chain(candidates: list[_Candidate], catalog: tuple[ItemSpec, ...]) -> list[_Candidate]:
    """Highest-quality chain strictly increasing in catalog order (candidates are in document order)."""
    order = {spec.code: k for k, spec in enumerate(catalog)}
    n = len(candidates)
    best = [c.quality for c in candidates]
    back = [-1] * n
    for j in range(n):
        oj = order[candidates[j].spec.code]
        for i in range(j):
            if order[candidates[i].spec.code] < oj and best[i] + candidates[j].quality > best[j]:
                best[j] = best[i] + candidates[j].quality
                back[j] = i
    if not n:
        return []
    j = max(range(n), key=lambda k: (best[k], k))
    chain = []
    while j >= 0:
        chain.append(candidates[j])
        j = back[j]
    return chain[::-1]


def _page_span(elements: list[Element], start: int, end: int) -> tuple[int, int]:
    pages = [p for el in elements[start:end] for p in el.pages]
    return (min(pages), max(pages)) if pages else (0, 0)


def _include_part_heading(elements: list[Element], index: int) -> int:
    """Move an Item's start back over a "PART II" heading that directly precedes it."""
    if index > 0 and elements[index - 1].kind == "text" and part_of(elements[index - 1].text) is not None:
        return index - 1
    return index


def detect_item_sections(elements: list[Element], form: str) -> list[Section]:
    """Split ``elements`` into Item sections for a 10-K, 10-Q or 8-K.

    Text before the first Item is the "cover" section. For an 8-K, exhibits after the last Item that start with
    an "Exhibit 99.1" heading become their own sections ("EX-99.1"). For a 10-K whose Item 8 is a short pointer
    to F-pages placed after the last Item, those pages form a second Item "8" section. Returns [] when no Item
    is found or the form has no Item catalog; callers then fall back to ``detect_heading_sections``.
    """
    family = form_family(form)
    if not family or not elements:
        return []
    catalog = CATALOGS[family]
    chain = _best_chain(_reject_toc(_candidates(elements, catalog), elements), catalog)
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
            for i in range(chain[-1].index + 1, len(elements)):
                el = elements[i]
                # The statements' first heading may have become a table's caption ("Index to Financial Statements").
                head = el.text if el.kind == "text" else (el.table.title if el.table is not None else "")
                if len(head) <= 120 and _STATEMENTS_START.search(head[:80]):
                    starts.append((i, "8", item8.spec.title, item8.spec.part, head))
                    break
    if family == "8-K":
        for i in range(chain[-1].index + 1, len(elements)):
            el = elements[i]
            m = _EXHIBIT_HEADING.match(el.text) if el.kind == "text" else None
            if m:
                starts.append((i, f"EX-{m.group(1)}", f"Exhibit {m.group(1)}", "", el.text))
    sections = []
    for k, (start, code, title, part, heading) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(elements)
        first, last = _page_span(elements, start, end)
        sections.append(Section(code, title, part, start, end, first, last, heading))
    return sections


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
