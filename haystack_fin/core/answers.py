"""Checkable answers: the numbers of a generated answer looked up in the passages it cites.

An analyst can only trust "revenue was $9.6 billion [3]" after finding 9.6 billion in passage 3. ``check_answer``
finds every number in an answer (amounts with a currency sign or a scale word, percentages, per-share amounts and
bare figures; years 1990-2039, citation markers, dates' days, Item/page/note numbers and form names excluded),
normalizes unit, scale and sign, and looks each one up in the cited passages: prose, the parsed table block in
``meta["table"]`` and the Markdown table rows of the passage text (a window merges neighbouring blocks into the
text, while ``meta["table"]`` holds the hit's block only). Cells are read with ``table_cells.parse_cell`` and units
with ``table_cells.detect_units``: the one cell parser of the package.

Matching is by value, not by string: "$9.6 billion" is supported by "9,583" in a "$ in millions" table (the passage
value, expressed in the answer's scale, rounds to what the answer printed), "$5,794" by "5,794", "-1,234" or
"(1,234)" by "(1,234)". A number found only with the opposite sign is still supported (the answer may say "a loss of
$1,234") but flagged ``sign_differs``. Numbers the answer computed (ratios, differences) are found in no passage and
are reported as unsupported on purpose: the reader should check that arithmetic.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from haystack_fin.core.table_cells import detect_units, parse_cell

# ---------------------------------------------------------------------------------------------------------------
# Numbers in text
# ---------------------------------------------------------------------------------------------------------------

_SCALES = {
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "mn": 1e6,
    "mm": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
}
# Citation groups "[3]", "[1, 2]", "[1-3]": blanked before numbers are searched, so their digits are never numbers.
CITATION = re.compile(r"\[\s*(\d{1,3}(?:\s*[,;\u2013-]\s*\d{1,3})*)\s*\]")
_NUMBER = re.compile(
    r"(?<![\w.,$])"  # not the tail of a word, a number or an identifier
    r"(?P<open>\()?"
    r"(?P<minus>[-\u2212\u2013])?"
    r"(?P<cur>US\$|\$|€|£)?\s?"
    r"(?P<open2>\()?"
    r"(?P<minus2>[-\u2212])?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<close>\))?"
    r"(?:\s?(?P<pct>%|percent\b|per\s?cent\b))?"
    r"(?:\s?(?P<scale>thousand|million|billion|trillion|bn|mn|mm)s?\b|(?P<abbr>[MBK])\b)?"
    r"(?P<pershare>\s+per\s+(?:basic\s+|diluted\s+|common\s+)?share)?",
    re.IGNORECASE,
)
_MONTH = re.compile(
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?\s+$",
    re.IGNORECASE,
)
# Numbers that name a place in the filing rather than report a figure: "Item 7", "page 17", "Note 5", "Part II".
_REFERENCE_WORD = re.compile(
    r"\b(?:items?|pages?|pp?\.|notes?|parts?|sections?|exhibits?|rules?|forms?|schedules?|q|fy|quarter|level|tier)"
    r"\s*$",
    re.IGNORECASE,
)
_PER_SHARE_LABEL = re.compile(r"per\s+(?:\w+\s+)?share|\beps\b|per\s+unit", re.IGNORECASE)


@dataclass(frozen=True)
class NumberMention:
    """One number printed in a text.

    ``value`` is signed and as printed ("9.6 billion" -> 9.6); ``scale`` the multiplier its own words give (1e9 for
    "billion"), None when none is printed; ``decimals`` how precisely it was printed (for rounding tolerance).
    ``kind`` is "percent", "per_share", "amount" (currency sign or scale word) or "number" (a bare figure).
    """

    text: str
    start: int
    end: int
    value: float
    decimals: int
    scale: float | None
    kind: str

    @property
    def absolute(self) -> float:
        """The value in units (dollars, shares): printed value times its own scale (1 when none)."""
        return self.value * (self.scale or 1.0)


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    """``text`` with every match of ``pattern`` replaced by spaces of the same length (offsets stay valid)."""
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def find_numbers(text: str) -> list[NumberMention]:
    """The numbers printed in ``text``, in order, without years (1990-2039 as bare integers), citation markers, the
    day of a date, reference numbers (Item, page, note, part, Q2, FY24) and form names ("10-K", "8-K")."""
    scan = _blank(text, CITATION)
    mentions: list[NumberMention] = []
    for match in _NUMBER.finditer(scan):
        num = match.group("num")
        after = scan[match.end("num") : match.end("num") + 2]
        before = scan[: match.start()]
        # "10-K", "10-Q", "8-K": a number joined by a hyphen to letters is a name, not a figure.
        if re.match(r"-[A-Za-z]", after):
            continue
        if _MONTH.search(before[-12:]) or _REFERENCE_WORD.search(before[-12:]):
            continue
        pct, pershare = match.group("pct"), match.group("pershare")
        scale_word = (match.group("scale") or match.group("abbr") or "").lower()
        # A lone "M"/"B"/"K" counts as a scale only right after a currency amount ("$583M"), never after a bare
        # figure ("12 B shares" is rarer than "Schedule 12 B" and guessing would invent a scale).
        if match.group("abbr") and not match.group("cur"):
            scale_word = ""
        cur = match.group("cur")
        plain_integer = "," not in num and "." not in num
        if plain_integer and not (cur or pct or scale_word) and 1990 <= int(num) <= 2039:
            continue  # a year
        negative = bool(match.group("minus") or match.group("minus2"))
        if (match.group("open") or match.group("open2")) and match.group("close"):
            negative = True
        value = float(num.replace(",", ""))
        decimals = len(num.split(".", 1)[1]) if "." in num else 0
        # "5-7%": the first end of a percentage range is a percentage too.
        if not pct and re.match(r"\s?[-\u2013]\s?\d[\d.,]*\s?(?:%|percent\b)", scan[match.end() : match.end() + 16]):
            pct = "%"
        if pct:
            kind = "percent"
        elif pershare:
            kind = "per_share"
        elif cur or scale_word:
            kind = "amount"
        else:
            kind = "number"
        paired = bool((match.group("open") or match.group("open2")) and match.group("close"))
        starts = [match.start(g) for g in ("minus", "cur", "open2", "minus2") if match.group(g)]
        start = min([match.start("num"), *starts, *([match.start("open")] if paired and match.group("open") else [])])
        if match.group("abbr") and not scale_word:
            end = match.end("num") + (1 if paired else 0)
        elif match.group("close") and not paired:
            # "(see 9.6) ..." style: the lone ")" belongs to an aside; keep the number and what follows it apart.
            end = match.end("num")
        else:
            end = match.end()
        mentions.append(
            NumberMention(
                text=text[start:end].strip(),
                start=start,
                end=end,
                value=-value if negative and value else value,
                decimals=decimals,
                scale=_SCALES[scale_word] if scale_word else None,
                kind=kind,
            )
        )
    return mentions


def cited_refs(answer: str) -> list[int]:
    """The passage numbers cited as ``[n]`` (also ``[1, 2]`` and ``[1-3]``), in order of first citation."""
    refs: list[int] = []
    for match in CITATION.finditer(answer):
        for part in re.split(r"\s*[,;]\s*", match.group(1)):
            bounds = re.split(r"\s*[\u2013-]\s*", part)
            lo, hi = int(bounds[0]), int(bounds[-1])
            for n in range(lo, hi + 1) if 0 < hi - lo < 20 else (lo,):
                if n not in refs:
                    refs.append(n)
    return refs


# ---------------------------------------------------------------------------------------------------------------
# Numbers in passages
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PassageNumber:
    """A number of a passage with what it takes to compare it: ``value`` as printed (signed), ``scale`` the
    multiplier that turns it into units (the number's own scale word, else the passage's unit statement, 1 for
    per-share rows and percentages), and where it stands (``location``)."""

    value: float
    scale: float
    is_percent: bool
    location: dict[str, Any]


def _table_numbers(table: Mapping[str, Any], passage_scale: float) -> list[PassageNumber]:
    columns = list(table.get("columns") or [])
    multiplier = float(table.get("multiplier") or passage_scale or 1.0)
    out: list[PassageNumber] = []
    for r, row in enumerate(table.get("rows") or []):
        label = str(row.get("label") or "")
        per_share = bool(_PER_SHARE_LABEL.search(label))
        for c, cell in enumerate(row.get("cells") or []):
            if c == 0:
                continue  # the label column
            parsed = parse_cell(str(cell))
            if parsed.value is None:
                continue
            column = str(columns[c]) if c < len(columns) else ""
            # A "%" column or row ("% change", "Gross profit rate (%)") prints its percentages without the sign.
            is_percent = parsed.is_percent or "%" in label or "%" in column
            out.append(
                PassageNumber(
                    value=parsed.value,
                    scale=1.0 if (per_share or is_percent) else multiplier,
                    is_percent=is_percent,
                    location={
                        "source": "table_cell",
                        "row": r,
                        "col": c,
                        "label": label,
                        "column": column,
                        "cell": str(cell),
                    },
                )
            )
    return out


def _markdown_rows(text: str) -> Iterable[tuple[int, list[str]]]:
    """The data rows of the Markdown tables in ``text`` (line index, cells); header separator rows skipped."""
    for i, line in enumerate(text.splitlines()):
        stripped = line.strip()
        if not (stripped.startswith("|") and stripped.endswith("|")) or len(stripped) < 2:
            continue
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", stripped[1:-1])]
        if all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
            continue
        yield i, cells


def _passage_numbers(text: str, meta: Mapping[str, Any]) -> list[PassageNumber]:
    """Every number of a passage: its parsed table block, the Markdown rows of its text, then its prose."""
    _, passage_scale = detect_units(text)
    out: list[PassageNumber] = []
    table = meta.get("table")
    if isinstance(table, Mapping):
        out.extend(_table_numbers(table, passage_scale))
    header: list[str] = []
    prose: list[str] = []
    for line in text.splitlines():
        if not line.strip().startswith("|"):
            prose.append(line)
    for i, cells in _markdown_rows(text):
        if not header:
            header = cells  # the first row of a Markdown table is its header
            continue
        label = cells[0] if cells else ""
        per_share = bool(_PER_SHARE_LABEL.search(label))
        for c, cell in enumerate(cells[1:], 1):
            parsed = parse_cell(cell)
            if parsed.value is None:
                continue
            column = header[c] if c < len(header) else ""
            out.append(
                PassageNumber(
                    value=parsed.value,
                    scale=1.0 if (per_share or parsed.is_percent) else passage_scale,
                    is_percent=parsed.is_percent,
                    location={"source": "table_text", "line": i, "label": label, "column": column, "cell": cell},
                )
            )
    prose_text = "\n".join(prose)
    for mention in find_numbers(prose_text):
        lo, hi = max(0, mention.start - 60), min(len(prose_text), mention.end + 60)
        if mention.scale is not None:
            scale = mention.scale
        elif mention.kind in ("percent", "per_share"):
            scale = 1.0
        else:
            # A bare prose figure in a passage whose units line says "$ in millions" is in millions; when there is
            # no units line it is in units. Both readings are kept by the comparison below (printed values match).
            scale = passage_scale
        out.append(
            PassageNumber(
                value=mention.value,
                scale=scale,
                is_percent=mention.kind == "percent",
                location={"source": "text", "text": mention.text, "context": " ".join(prose_text[lo:hi].split())},
            )
        )
    return out


# ---------------------------------------------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------------------------------------------


def _close(a: float, b: float, decimals: int) -> bool:
    """``a`` (a passage value) rounds to ``b`` (printed with ``decimals`` decimals)."""
    tolerance = 0.5 * 10.0**-decimals
    return abs(a - b) <= tolerance + 1e-9 * max(1.0, abs(a), abs(b))


def _exact(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def match_number(mention: NumberMention, number: PassageNumber) -> tuple[bool, bool, bool] | None:
    """Whether ``number`` supports ``mention``: None if not, else (exact, sign_differs, rounded) flags.

    Percentages match percentages only, amounts never match percentages. A mention with its own scale ("9.6
    billion") is compared in units, rounded to its printed precision; a mention without one ("$5,794", "5,794") is
    compared with the passage value as printed and, failing that, in units ("$2,800,000,000" vs "$2.8 billion").
    """
    if (mention.kind == "percent") != number.is_percent:
        return None
    for sign_differs in (False, True):
        value = -mention.value if sign_differs else mention.value
        if sign_differs and not value:
            break
        if mention.kind == "percent":
            if _exact(number.value, value):
                return True, sign_differs, False
            if _close(number.value, value, mention.decimals):
                return False, sign_differs, True
            continue
        if mention.scale is not None:
            in_answer_scale = number.value * number.scale / mention.scale
            if _exact(in_answer_scale, value):
                return True, sign_differs, False
            if _close(in_answer_scale, value, mention.decimals):
                return False, sign_differs, True
            continue
        if _exact(number.value, value) or _exact(number.value * number.scale, value):
            return True, sign_differs, False
    return None


@dataclass
class Passage:
    """A cited passage as the checker sees it: text and provenance meta (``filing_id``, ``item``,
    ``page_numbers``, ``table_id``, ``table``)."""

    text: str
    meta: Mapping[str, Any]
    id: str | None = None


@dataclass
class Found:
    """Where a number of the answer was found: the passage number ``ref`` and the cell or text of the match."""

    ref: int
    location: dict[str, Any]
    exact: bool
    sign_differs: bool
    rounded: bool


@dataclass
class CheckedNumber:
    text: str
    start: int
    end: int
    kind: str
    value: float
    scale: float | None
    found: list[Found] = field(default_factory=list)


@dataclass
class AnswerCheck:
    """The outcome of ``check_answer``: ``citations`` (one per cited passage that exists: filing, Item, pages,
    table id and the numbers found in it), ``unsupported_numbers`` (numbers found in no cited passage, with the
    uncited passages that hold them, if any), every checked number, and citation markers pointing past the
    passages (``invalid_refs``)."""

    citations: list[dict[str, Any]]
    unsupported_numbers: list[dict[str, Any]]
    numbers: list[CheckedNumber]
    invalid_refs: list[int]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (Document/Answer meta, API responses)."""
        return asdict(self)


def _citation(ref: int, passage: Passage) -> dict[str, Any]:
    m = passage.meta
    return {
        "ref": ref,
        "document_id": passage.id,
        "filing_id": m.get("filing_id"),
        "company": m.get("company"),
        "form": m.get("form"),
        "period": m.get("period"),
        "item": m.get("item"),
        "pages": list(m.get("page_numbers") or []),
        "table_id": m.get("table_id"),
        "numbers": [],
    }


def check_answer(answer: str, passages: list[Passage]) -> AnswerCheck:
    """Find the numbers of ``answer`` in the passages it cites (``[n]`` is ``passages[n - 1]``).

    Every cited passage that exists gets a citation entry; a number found in several cited passages lists each;
    a number found in none is unsupported, with the refs of uncited passages that do hold it (the answer cited the
    wrong passage) under ``in_uncited``.
    """
    refs = cited_refs(answer)
    invalid = [n for n in refs if not 1 <= n <= len(passages)]
    cited = [n for n in refs if 1 <= n <= len(passages)]
    numbers_of: dict[int, list[PassageNumber]] = {}

    def numbers(ref: int) -> list[PassageNumber]:
        if ref not in numbers_of:
            p = passages[ref - 1]
            numbers_of[ref] = _passage_numbers(p.text or "", p.meta)
        return numbers_of[ref]

    citations = {n: _citation(n, passages[n - 1]) for n in cited}
    checked: list[CheckedNumber] = []
    unsupported: list[dict[str, Any]] = []
    for mention in find_numbers(answer):
        item = CheckedNumber(mention.text, mention.start, mention.end, mention.kind, mention.value, mention.scale)
        for ref in cited:
            hit = _first_match(mention, numbers(ref))
            if hit is not None:
                number, (exact, sign_differs, rounded) = hit
                item.found.append(Found(ref, number.location, exact, sign_differs, rounded))
                citations[ref]["numbers"].append({"text": mention.text, **_short(number.location)})
        checked.append(item)
        if not item.found:
            elsewhere = [
                n
                for n in range(1, len(passages) + 1)
                if n not in citations and _first_match(mention, numbers(n)) is not None
            ]
            unsupported.append(
                {
                    "text": mention.text,
                    "start": mention.start,
                    "kind": mention.kind,
                    "value": mention.value,
                    "reason": f"not in cited passages {cited}" if cited else "the answer cites no passage",
                    "in_uncited": elsewhere,
                }
            )
    return AnswerCheck(list(citations.values()), unsupported, checked, invalid)


def _first_match(
    mention: NumberMention, numbers: list[PassageNumber]
) -> tuple[PassageNumber, tuple[bool, bool, bool]] | None:
    """The best supporting number: same sign before opposite sign, exact before rounded, then the closest value
    ("$9.6 billion" is both 9,583 and 9,569 millions rounded; 9,583 is the nearer)."""
    best: tuple[tuple[int, int, float], PassageNumber, tuple[bool, bool, bool]] | None = None
    for number in numbers:
        flags = match_number(mention, number)
        if flags is None:
            continue
        error = abs(abs(number.value * number.scale) - abs(mention.absolute))
        if mention.scale is None:
            error = min(error, abs(abs(number.value) - abs(mention.value)))
        rank = (int(flags[1]), int(not flags[0]), error)
        if best is None or rank < best[0]:
            best = (rank, number, flags)
            if rank[:2] == (0, 0) and not error:
                break
    return (best[1], best[2]) if best else None


def _short(location: dict[str, Any]) -> dict[str, Any]:
    """The part of a location worth repeating in a citation (no surrounding context)."""
    return {k: v for k, v in location.items() if k != "context"}
