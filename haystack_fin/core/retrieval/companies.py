"""The indexed companies and a finder for them in questions: names, aliases, tickers, small typos.

``CompanyIndex`` turns the indexed filings' company names and tickers into aliases and finds them in a question
(exact name or alias, case-sensitive ticker, fuzzy name for small typos); ``company_key`` groups spellings of one
company, ``company_aliases`` lists the names a company goes by (the ranker also uses them to ignore company names).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a type only: filing_ranking imports this module
    from haystack_fin.core.retrieval.filing_ranking import FilingProfile

logger = logging.getLogger(__name__)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Ordinary English and finance words. A company alias made only of them ("Target", "Visa", "Best Buy") must be
# capitalized in the question, a first-word alias made of one ("best" from Best Buy, "american" from American
# Express) is not generated, and fuzzy matching never "corrects" them.
_ORDINARY_WORDS = _words(
    """
    a about above across after all also american an and annual any apple are as asset assets at average bank based
    be been being best between big block blue bright business but buy by can capital cash central century change
    chase choice citizens city clear common community company consolidated corporate cost credit current data day
    days debt did digital discover do does dollar domestic down during each east eastern energy equity every
    express family federal fidelity financial first fiscal for free from general global gold golden good great
    group growth had has have health high home how in income interest international is it its key labor last
    liberty life live low main market match meta more most national net new next north northern not of old on one
    open or other our over pacific people peoples per plus principal progressive public quality quarter rate real
    regional republic resources return revenue royal sales same security service services shares south southern
    standard state states steel stock street summit target than that the their there these this total trade
    travelers trust two under union united universal up us value visa was west western what when where which who
    why will with world year years
    """
)
# Upper-case words and finance abbreviations that are also tickers (GM, IT, ALL, ON, ...): such a ticker counts only
# written as "$GM", "ticker GM" or "(NYSE: GM)".
_AMBIGUOUS_TICKERS = _words(
    """
    A I AN AS AT BE BY DO GO HE IF IN IS IT ME MY NO OF OK ON OR SO TO UP US WE AI AP AR CF DA EU EV FX GM HR NA NI
    OM PB PE PP RD UK ALL AND ANY ARE BIG CAN CEO CFO COO CTO FOR HAS KEY LOW NEW NOT NOW ONE THE TWO USA USD EUR GBP
    EPS ROA ROE ROI ROIC EBIT EBITDA EBITDAR GAAP FCF CAPEX COGS SGA PPE DSO DPO DIO AGM SEC IPO LTM TTM YOY QOQ FY
    NOI FFO AFFO NIM ESG TAM ARPU KPI CAGR WACC NPV IRR LIFO FIFO AOCI OCI SBC RSU ETF REIT LLC INC CORP CO BEST
    """
)
# Legal-form and group words dropped from the end of a company name to build its base alias.
_NAME_SUFFIXES = _words(
    """
    inc incorporated corp corporation co company companies cos ltd limited plc llc lp llp nv sa ag se spa bv holdings
    holding group international intl com the and
    """
)
# Legal forms only: what may follow a company's own name ("Best Buy Co., Inc."), unlike "holdings" or "group",
# which name another entity of the same base name ("Best Buy Holdings Inc.").
_LEGAL_FORMS = _words(
    "inc incorporated corp corporation co company companies cos ltd limited plc llc lp llp nv sa ag se spa bv"
)

_CAMEL_LEGAL = re.compile(r"^(?P<head>[A-Z][a-z]+(?:[A-Z][a-z]+)*?)(?P<tail>Co|Corp|Inc)$")
_TICKER_CONTEXT = re.compile(r"(?:ticker|symbol|NYSE|NASDAQ|Nasdaq|AMEX|CBOE)\s*(?::\s*)?$", re.IGNORECASE)
_KIND_PRIORITY = {"name": 0, "alias": 1, "ticker": 2, "short": 3, "fuzzy": 4}
_FUZZY_MIN_LEN = 5
_FUZZY_LOWERCASE_MIN_LEN = 8  # shorter names must be capitalized to be fuzzy-matched ("being" is not "Boeing")


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    return "".join(c for c in text if not unicodedata.combining(c)).lower().replace("’", "'")


def _name_tokens(name: str, drop_ampersand: bool = False) -> list[str]:
    s = _fold(name)
    s = re.sub(r"\b([a-z])\.(?=[a-z]\.)", r"\1", s)  # "l.p." -> "lp.", "n.v." -> "nv."
    s = re.sub(r"'s\b", "", s)
    s = s.replace("&", " " if drop_ampersand else " and ")
    return re.findall(r"[^\W_]+", s)


def _strip_name(tokens: list[str]) -> list[str]:
    t = list(tokens)
    if len(t) > 1 and t[0] == "the":
        t = t[1:]
    while len(t) > 1 and t[-1] in _NAME_SUFFIXES:
        t.pop()
    return t


def names_whole_company(mention: str, company: str) -> bool:
    """Whether ``mention`` is all of ``company``'s name but its legal form: "Best Buy" is all of "Best Buy Co.,
    Inc." but not of "Best Buy Holdings Inc.", although both share the grouping key "best buy" (``company_key``
    drops "holdings" so that a holding company groups with its name). Compared without spaces and punctuation."""
    tokens = _name_tokens(company)
    if len(tokens) > 1 and tokens[0] == "the":
        tokens = tokens[1:]
    while len(tokens) > 1 and tokens[-1] in _LEGAL_FORMS:
        tokens.pop()
    said = _name_tokens(mention)
    if len(said) > 1 and said[0] == "the":
        said = said[1:]
    return bool(said) and "".join(said) == "".join(tokens)


def company_key(name: str) -> str:
    """Grouping key of a company name: "BEST BUY CO., INC." and "Best Buy Co., Inc." -> "best buy"."""
    return " ".join(_strip_name(_name_tokens(name)))


def company_aliases(name: str) -> list[tuple[str, str]]:
    """(alias, kind) pairs for a company name; kind "name" (full or without legal suffix) or "short".

    "MGM RESORTS INTERNATIONAL" -> mgm resorts international, mgm resorts, mgm (short); "THE COCA-COLA COMPANY" ->
    coca cola company, coca cola, coca (short); "PepsiCo, Inc." -> pepsico, pepsi (short, from the camel-case
    "Pepsi" + "Co"). Matching compares aliases without spaces, so "coca cola", "Coca-Cola" and "CocaCola" agree.
    """
    out: list[tuple[str, str]] = []

    def add(tokens: list[str], kind: str) -> None:
        alias = " ".join(tokens)
        if alias and all(alias != a for a, _ in out):
            out.append((alias, kind))

    for drop in (False, True):
        full = _name_tokens(name, drop)
        if len(full) > 1 and full[0] == "the":
            full = full[1:]
        base = _strip_name(full)
        add(full, "name")
        add(base, "name")
        first = base[0] if base else ""
        if len(base) > 1 and len(first) >= 3 and not first.isdigit() and first not in _ORDINARY_WORDS:
            add([first], "short")
    words = [w.strip(",.;") for w in name.split()]
    camel = [m.group("head") if (m := _CAMEL_LEGAL.match(w)) else w for w in words]
    if camel != words:
        add(_strip_name(_name_tokens(" ".join(camel))), "short")
    return out


def _osa_distance(a: str, b: str, limit: int) -> int:
    """Optimal-string-alignment edit distance (a transposition counts 1); ``limit + 1`` once it exceeds ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1] if prev[-1] <= limit else limit + 1


@dataclass(frozen=True)
class CompanyMention:
    """A company named in a question: the question's text and which indexed company (by key) it matched how."""

    text: str
    start: int
    end: int
    key: str
    company: str
    alias: str
    how: str  # "name", "alias" (user map), "ticker", "short" (first word), "fuzzy"
    distance: int = 0

    def describe(self) -> str:
        how = {
            "name": "name",
            "alias": "user alias",
            "ticker": "ticker",
            "short": "short name",
            "fuzzy": f"name (fuzzy, {self.distance} edit{'s' if self.distance != 1 else ''})",
        }[self.how]
        return f"company '{self.text}' matched {how} '{self.alias}' of {self.company}"


@dataclass
class CompanyEntry:
    key: str
    name: str
    tickers: tuple[str, ...]
    filing_ids: list[str]


@dataclass(frozen=True)
class _Alias:
    key: str
    alias: str
    kind: str
    needs_caps: bool


class CompanyIndex:
    """Aliases and tickers of the indexed companies, and a finder for them in questions.

    Filings are grouped by company: by the name without legal suffixes, and names sharing a ticker are merged
    (a renamed company, or cover-page and press-release spellings). ``aliases`` maps a company (its name, key,
    ticker or one of its filing ids) to extra names, e.g. ``{"THE COCA-COLA COMPANY": ["coke"]}``.
    """

    def __init__(self, profiles: Iterable[FilingProfile], aliases: Mapping[str, Sequence[str]] | None = None) -> None:
        self.companies: dict[str, CompanyEntry] = {}
        self.key_of_filing: dict[str, str] = {}
        self._compact: dict[str, list[_Alias]] = {}
        self._tickers: dict[str, str] = {}
        self._max_tokens = 1
        self._build(list(profiles), aliases or {})

    # build ----------------------------------------------------------------------------------------------------------

    def _build(self, profiles: list[FilingProfile], aliases: Mapping[str, Sequence[str]]) -> None:
        names: dict[str, list[str]] = {}
        parent: dict[str, str] = {}

        def find(k: str) -> str:
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k

        raw_key: dict[str, str] = {}
        by_ticker: dict[str, str] = {}
        for p in profiles:
            key = company_key(p.company) if p.company else (p.ticker.lower() if p.ticker else "")
            if not key:
                continue
            raw_key[p.filing_id] = key
            parent.setdefault(key, key)
            names.setdefault(key, []).append(p.company or p.ticker)
            if p.ticker:
                other = by_ticker.setdefault(p.ticker.upper(), key)
                a, b = find(other), find(key)
                if a != b:
                    parent[max(a, b)] = min(a, b)
        for p in profiles:
            if p.filing_id not in raw_key:
                continue
            key = find(raw_key[p.filing_id])
            self.key_of_filing[p.filing_id] = key
            entry = self.companies.get(key)
            if entry is None:
                entry = self.companies[key] = CompanyEntry(key, "", (), [])
            entry.filing_ids.append(p.filing_id)
            if p.ticker and p.ticker.upper() not in entry.tickers:
                entry.tickers = (*entry.tickers, p.ticker.upper())
        group_names: dict[str, list[str]] = {}
        for key, ns in names.items():
            group_names.setdefault(find(key), []).extend(ns)
        for key, entry in self.companies.items():
            ns = group_names.get(key, [])
            entry.name = max(set(ns), key=ns.count) if ns else key
            for n in dict.fromkeys(ns):
                for alias, kind in company_aliases(n):
                    self._add_alias(key, alias, kind)
            for ticker in entry.tickers:
                self._tickers.setdefault(ticker, key)
        self._add_user_aliases(aliases)
        # A short alias shared with another company's full or base name ("mgm": MGM Holdings, and short for MGM
        # Resorts) is that company's name. A short alias only shared with other short aliases ("verizon": Verizon
        # Communications and Verizon Wireless Partners) names all of them: the question is ambiguous, and dropping
        # the alias would leave it unscoped, i.e. searched across every company. Scope then ranks their filings by
        # period and form. (Ordinary first words such as "american" never become short aliases.)
        for compact, entries in list(self._compact.items()):
            keys = {e.key for e in entries}
            if len(keys) > 1:
                kept = [e for e in entries if e.kind != "short"]
                if kept:
                    self._compact[compact] = kept

    def _add_alias(self, key: str, alias: str, kind: str) -> None:
        tokens = alias.split()
        compact = "".join(tokens)
        if not compact:
            return
        needs_caps = kind != "alias" and all(t in _ORDINARY_WORDS for t in tokens)
        entries = self._compact.setdefault(compact, [])
        if any(e.key == key for e in entries):
            return
        entries.append(_Alias(key, alias, kind, needs_caps))
        self._max_tokens = max(self._max_tokens, len(tokens))

    def _add_user_aliases(self, aliases: Mapping[str, Sequence[str]]) -> None:
        for target, extra in aliases.items():
            keys = self._resolve_alias_target(target)
            if not keys:
                logger.warning("Alias target %r names no indexed company; its aliases are ignored", target)
                continue
            for key in keys:
                for alias in extra:
                    self._add_alias(key, " ".join(_name_tokens(alias)), "alias")

    def _resolve_alias_target(self, target: str) -> list[str]:
        if target in self.key_of_filing:
            return [self.key_of_filing[target]]
        if target.upper() in self._tickers:
            return [self._tickers[target.upper()]]
        key = company_key(target)
        return [key] if key in self.companies else []

    # lookup ---------------------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.companies)

    def aliases_of(self, key: str) -> list[str]:
        return sorted({e.alias for entries in self._compact.values() for e in entries if e.key == key})

    def find(self, question: str) -> list[CompanyMention]:
        """Companies named in ``question``: names and aliases, then tickers; fuzzy names only when neither hit."""
        tokens = self._tokens(question)
        found = self._exact(question, tokens) + self._ticker_hits(question)
        if not found:
            found = self._fuzzy(question, tokens)
        return self._non_overlapping(found)

    @staticmethod
    def _tokens(question: str) -> list[tuple[str, int, int]]:
        out: list[tuple[str, int, int]] = []
        for m in re.finditer(r"[^\W_]+", question):
            # The possessive "s" of "Best Buy's" is not part of the name.
            if m.group(0) in ("s", "S") and m.start() > 0 and question[m.start() - 1] in "'’":
                continue
            out.append((_fold(m.group(0)), m.start(), m.end()))
        return out

    def _exact(self, question: str, tokens: list[tuple[str, int, int]]) -> list[CompanyMention]:
        found: list[CompanyMention] = []
        for i in range(len(tokens)):
            compact = ""
            for j in range(i, min(len(tokens), i + self._max_tokens + 2)):
                compact += tokens[j][0]
                for e in self._compact.get(compact, ()):
                    start, end = tokens[i][1], tokens[j][2]
                    span = question[start:end]
                    if e.needs_caps and not span[:1].isupper():
                        continue
                    found.append(self._mention(span, start, end, e.key, e.alias, e.kind))
        return found

    def _ticker_hits(self, question: str) -> list[CompanyMention]:
        if not self._tickers:
            return []
        pattern = "|".join(re.escape(t) for t in sorted(self._tickers, key=len, reverse=True))
        found: list[CompanyMention] = []
        for m in re.finditer(rf"(?<![\w$])(?P<cash>\$)?(?P<t>{pattern})(?![\w])", question):
            ticker = m.group("t")
            if (ticker in _AMBIGUOUS_TICKERS or len(ticker) == 1) and not (
                m.group("cash") or _TICKER_CONTEXT.search(question[max(0, m.start() - 20) : m.start()])
            ):
                continue
            found.append(self._mention(m.group(0), m.start(), m.end(), self._tickers[ticker], ticker, "ticker"))
        return found

    def _fuzzy(self, question: str, tokens: list[tuple[str, int, int]]) -> list[CompanyMention]:
        by_first: dict[str, list[tuple[str, _Alias]]] = {}
        for compact, entries in self._compact.items():
            if len(compact) >= _FUZZY_MIN_LEN and not compact.isdigit():
                for e in entries:
                    by_first.setdefault(compact[0], []).append((compact, e))
        found: list[CompanyMention] = []
        for i in range(len(tokens)):
            compact = ""
            words: list[str] = []
            for j in range(i, min(len(tokens), i + 3)):
                compact += tokens[j][0]
                words.append(tokens[j][0])
                if len(compact) < _FUZZY_MIN_LEN - 1 or all(w in _ORDINARY_WORDS for w in words):
                    continue
                start, end = tokens[i][1], tokens[j][2]
                capitalized = question[start].isupper()
                for alias_compact, e in by_first.get(compact[0], ()):
                    if not capitalized and (e.needs_caps or len(alias_compact) < _FUZZY_LOWERCASE_MIN_LEN):
                        continue
                    limit = 1 if len(alias_compact) <= 8 else 2
                    d = _osa_distance(compact, alias_compact, limit)
                    if 0 < d <= limit:
                        found.append(self._mention(question[start:end], start, end, e.key, e.alias, "fuzzy", d))
        return found

    def _mention(
        self, text: str, start: int, end: int, key: str, alias: str, how: str, distance: int = 0
    ) -> CompanyMention:
        return CompanyMention(text, start, end, key, self.companies[key].name, alias, how, distance)

    @staticmethod
    def _non_overlapping(found: list[CompanyMention]) -> list[CompanyMention]:
        """Longest, most certain spans first; a span inside a kept one is dropped (unless it is the same span).

        The same span naming several companies keeps them all (the question is ambiguous and retrieval decides),
        except that an exact ticker hit wins over the others: a symbol written as such ("MGM", "GE") identifies
        one listed company, while the same word as a name or short alias ("MGM" of "MGM Holdings", "GE" of "GE
        HealthCare") is only a partial name."""
        ranked = sorted(found, key=lambda m: (m.distance, -(m.end - m.start), _KIND_PRIORITY[m.how], m.start))
        kept: list[CompanyMention] = []
        for m in ranked:
            clash = [k for k in kept if m.start < k.end and k.start < m.end]
            if any((k.start, k.end) != (m.start, m.end) or k.key == m.key for k in clash):
                continue
            kept.append(m)
        spans_with_ticker = {(m.start, m.end) for m in kept if m.how == "ticker"}
        kept = [m for m in kept if m.how == "ticker" or (m.start, m.end) not in spans_with_ticker]
        return sorted(kept, key=lambda m: m.start)


# --- capitalized spans that are not company names -----------------------------------------------------------------

# Words a question capitalizes for segments, regions, channels and generic nouns rather than for a company
# ("Domestic segment revenue", "International", "North America", "the Company's tax rate"). A span made only of
# these is not reported as an unknown company. Closed and short on purpose: it lists what filings call segments
# and regions, not every English word.
NOT_COMPANY_WORDS = frozenset(
    {
        "domestic", "international", "global", "worldwide", "north", "south", "east", "west", "central", "latin",
        "america", "americas", "europe", "european", "asia", "pacific", "emea", "apac", "china", "greater", "japan",
        "canada", "mexico", "u.s.", "us", "usa", "united", "states", "kingdom", "middle", "africa", "rest", "world",
        "consumer", "commercial", "enterprise", "retail", "wholesale", "online", "digital", "services", "products",
        "segment", "segments", "company", "company's", "corporate", "other", "total", "all", "new", "core",
        "management", "management's", "board", "directors", "shareholders", "stockholders", "auditor", "auditors",
    }
)  # fmt: skip
# A capitalized span right before one of these names a segment or a region of the filer, not another company.
SEGMENT_NOUNS = frozenset({"segment", "segments", "division", "divisions", "region", "regions", "business", "unit"})


def may_name_company(question: str, start: int, end: int, term_texts: Iterable[str] = ()) -> bool:
    """Whether the capitalized span ``question[start:end]`` may name a company the index lacks, for the "not in
    these filings" notice: not when every word is a segment, region or generic word (``NOT_COMPANY_WORDS``), when a
    segment noun follows it ("Domestic segment"), or when its words are lexicon terms the question matched
    ("Capital Expenditures", "Revenue": ``term_texts``, the terms as written in the question)."""
    words = [w.lower() for w in re.findall(r"[\w.'’&-]+", question[start:end])]
    if not words or all(w in NOT_COMPANY_WORDS for w in words):
        return False
    following = re.match(r"\s+([A-Za-z]+)", question[end:])
    if following and following.group(1).lower() in SEGMENT_NOUNS:
        return False
    term_words = {w.lower() for text in term_texts for w in re.findall(r"[\w.'’&-]+", text)}
    return not all(w in term_words or w in NOT_COMPANY_WORDS for w in words)
