"""The indexed companies and a finder for them in questions, with the known companies the index lacks.

``CompanyIndex`` groups the indexed filings into registrants by what identifies them (CIK, ticker, SEC file number,
IRS number, the same name, a former name the filing states, a rename listed in the alias file), derives every
alias of their names by general rules (``company_names``), adds the listed and user aliases and, with a company
reference table (``company_reference``), the tickers a cover did not print. ``find`` resolves a question's company
mentions: exact alias, then ticker, then fuzzy match; ``find_known`` finds companies of the reference table that
the index lacks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from haystack_fin.core.log import get_logger
from haystack_fin.core.retrieval.company_names import (
    CONNECTORS,
    GENERIC_WORDS,
    ORDINARY_WORDS,
    STRENGTH,
    Alias,
    compact,
    company_aliases,
    company_key,
    derived_aliases,
    fold,
    name_tokens,
    names_whole_company,
    osa_distance,
    ticker_word_aliases,
    without_legal_form,
)
from haystack_fin.core.retrieval.company_reference import CompanyReference
from haystack_fin.core.retrieval.filing_profile import FilingProfile

__all__ = [
    "CompanyEntry",
    "CompanyIndex",
    "CompanyMention",
    "KnownMention",
    "company_aliases",
    "company_key",
    "load_alias_file",
    "may_name_company",
    "names_whole_company",
]

logger = get_logger(__name__)


def _upper_words(text: str) -> frozenset[str]:
    return frozenset(text.split())


ALIAS_FILE = Path(__file__).resolve().parents[2] / "data" / "company_aliases.yaml"

# Upper-case words and finance abbreviations that are also tickers (GM, IT, ALL, ON, ...): such a ticker counts only
# written as "$GM", "ticker GM" or "(NYSE: GM)".
_AMBIGUOUS_TICKERS = _upper_words(
    """
    A I AN AS AT BE BY DO GO HE IF IN IS IT ME MY NO OF OK ON OR SO TO UP US WE AI AP AR CF DA EU EV FX GM HR NA NI
    OM PB PE PP RD UK ALL AND ANY ARE BIG CAN CEO CFO COO CTO FOR HAS KEY LOW NEW NOT NOW ONE THE TWO USA USD EUR
    GBP EPS ROA ROE ROI ROIC EBIT EBITDA EBITDAR GAAP FCF CAPEX COGS SGA PPE DSO DPO DIO AGM SEC IPO LTM TTM YOY
    QOQ FY NOI FFO AFFO NIM ESG TAM ARPU KPI CAGR WACC NPV IRR LIFO FIFO AOCI OCI SBC RSU ETF REIT LLC INC CORP CO
    BEST
    """
)
# More upper-case words of financial questions: only a ticker of an indexed company may be one of these, never a
# company of the reference table the index lacks.
_FINANCE_WORDS = _upper_words(
    """
    AUM ARR NRR MAU DAU GMV TPV ADR ADS RWA LCR CET HQLA NOL DTA DTL OCF FCFF FCFE NOPAT EV EVA MD MDA CEO CFO COO
    CIO CTO CAO ETR TSR PSU DEI IT HR AR AP PPA LBO MBO SPAC NYSE NASDAQ AMEX OTC CPI GDP FOMC FED IRS FASB IASB
    IFRS ASC ASU SOX PCAOB MSRP SKU ROS ROCE ROTCE DCF LTV CAC DSCR FICO APR APY CDS CDO MBS ABS CLO RMBS CMBS ISDA
    LIBOR SOFR EURIBOR OPEX REV INV NET ADJ TOT AVG MAX MIN EST NA YTD MTD QTD USA UK EU US COVID ESPP CAPEX
    EBITDAX
    """
)
# A ticker as a question writes it: "BBY", "$BBY", "BRK.B", "BRK-B".
_SYMBOL_IN_TEXT = re.compile(r"(?<![\w$])(?P<cash>\$)?(?P<t>[A-Z]{1,5}(?:[.-][A-Z]{1,2})?)(?![\w])")
_TICKER_CONTEXT = re.compile(r"(?:ticker|symbol|NYSE|NASDAQ|Nasdaq|AMEX|CBOE)\s*(?::\s*)?$", re.IGNORECASE)
# "J&J", "P & G", "JnJ", "BofA", "IBM", "AMD": an initialism as a question writes it.
_INITIALISM = re.compile(
    r"(?<![\w&])(?P<i>[A-Z](?:\s?&\s?[A-Z]|n(?=[A-Z])[A-Z]|of?(?=[A-Z])[A-Z]|[A-Z]){1,7})(?![\w&])"
)
# "Q2", "FY2023", "H1", "10-K": period and form words, which some company names also are ("Q2 Holdings").
_PERIOD_OR_FORM = re.compile(r"(?i)(?:q[1-4]|h[12]|fy\s?'?\d{2,4}|\d{1,4}|\d{1,2}-?[kqf])")
_FUZZY_MIN_LEN = 5
# Fuzzy matching allows one edit (insertion, deletion, substitution or transposition) in a name of 5 to 8 letters
# and two in a longer one: most misspellings are a single such edit (Damerau 1964 found over 80%), and two edits
# in a short name reach other words ("Boeing" -> "being", "Visa" -> "vise"). Names of under 8 letters must also be
# capitalized in the question to be corrected.
_FUZZY_LOWERCASE_MIN_LEN = 8


def _fuzzy_limit(length: int) -> int:
    return 1 if length <= 8 else 2


@dataclass(frozen=True)
class CompanyMention:
    """A company named in a question: the question's text and which indexed company (by key) it matched how."""

    text: str
    start: int
    end: int
    key: str
    company: str
    alias: str
    how: str  # name, alias (user), listed (alias file), former, initialism, abbreviation, short, ticker, fuzzy
    distance: int = 0

    @property
    def strength(self) -> int:
        if self.how == "ticker":
            return 4
        return 0 if self.how in ("fuzzy", "token") else STRENGTH.get(self.how, 3)

    def describe(self) -> str:
        how = {
            "name": "name",
            "alias": "user alias",
            "listed": "listed alias",
            "former": "former name",
            "initialism": "initialism",
            "abbreviation": "abbreviation",
            "ticker": "ticker",
            "short": "short name",
            "fuzzy": f"name (fuzzy, {self.distance} edit{'s' if self.distance != 1 else ''})",
            "token": "a distinctive word of the name",
        }.get(self.how, self.how)
        return f"company '{self.text}' matched {how} '{self.alias}' of {self.company}"


@dataclass(frozen=True)
class KnownMention:
    """A company of the reference table that the question names and the index lacks."""

    text: str
    start: int
    end: int
    name: str
    ticker: str
    cik: str
    how: str  # "name" or "ticker"

    def describe(self) -> str:
        ticker = f" ({self.ticker})" if self.ticker else ""
        return f"'{self.text}' is {self.name}{ticker}, which is not in the indexed filings"


@dataclass
class CompanyEntry:
    """One indexed registrant: the filings grouped as one company, its names and tickers."""

    key: str
    name: str
    tickers: tuple[str, ...]
    filing_ids: list[str]
    cik: str = ""
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class _AliasEntry:
    key: str  # company key
    alias: Alias
    how: str


@dataclass
class _Groups:
    parent: dict[str, str] = field(default_factory=dict)

    def find(self, k: str) -> str:
        self.parent.setdefault(k, k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def load_alias_file(path: str | Path) -> dict[str, list[str]]:
    """A YAML (or JSON) alias file: ``{company (name, ticker, CIK or filing id): [alias, ...]}``.

    :raises ValueError: the file cannot be read or is not such a mapping, naming the file.
    """
    import yaml  # PyYAML comes with Haystack

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{p}: cannot read the alias file ({exc})") from exc
    if not isinstance(data, Mapping) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(a, str) for a in v) for k, v in data.items()
    ):
        raise ValueError(f"{p}: an alias file maps a company (text) to a list of names")
    return {str(k): [str(a) for a in v] for k, v in data.items()}


def _name_key(name: str) -> str:
    return "".join(without_legal_form(name_tokens(name, drop_ampersand=True)))


class CompanyIndex:
    """Registrants of the indexed filings, their aliases and tickers, and a finder for them in questions.

    :param profiles: the indexed filings.
    :param aliases: user aliases, ``{company: [alias, ...]}``; the company is named by its name, ticker, CIK or
        one of its filing ids (a warning names the ones that match no indexed company).
    :param listed_aliases: the shipped alias file's entries (brands and renames, ``load_alias_file(ALIAS_FILE)``):
        the same form, for companies that may not be indexed (silently skipped then); an alias that is the name of
        another indexed company's filings (a rename) joins the two into one company.
    :param reference: known companies (``company_reference``): tickers covers did not print, and ``find_known``.
    """

    def __init__(
        self,
        profiles: Iterable[FilingProfile],
        aliases: Mapping[str, Sequence[str]] | None = None,
        listed_aliases: Mapping[str, Sequence[str]] | None = None,
        reference: CompanyReference | None = None,
    ) -> None:
        self.companies: dict[str, CompanyEntry] = {}
        self.key_of_filing: dict[str, str] = {}
        self.reference = reference
        self._aliases: dict[str, list[_AliasEntry]] = {}
        self._initialisms: dict[str, list[_AliasEntry]] = {}
        self._tickers: dict[str, str] = {}
        self._max_tokens = 1
        self._indexed_ciks: set[str] = set()
        self._former: dict[str, tuple[str, ...]] = {}
        self._by_name_key: dict[str, list[str]] | None = None
        self._later_words: dict[str, set[str]] = {}
        self._build(list(profiles), aliases or {}, listed_aliases or {})
        self._fuzzy_by_first: dict[str, list[tuple[str, _AliasEntry]]] = {}
        for key, entries in self._aliases.items():
            if len(key) >= _FUZZY_MIN_LEN and not key.isdigit():
                for e in entries:
                    self._fuzzy_by_first.setdefault(key[0], []).append((key, e))

    # build ----------------------------------------------------------------------------------------------------------

    def _reference_cik(self, p: FilingProfile) -> str:
        if p.cik or self.reference is None:
            return p.cik
        for name in p.names:
            named = self.reference.named(name)
            if len(named) == 1:
                return named[0].cik
        for ticker in p.all_tickers:
            known = self.reference.by_symbol(ticker)
            if known is not None:
                return known.cik
        return ""

    def _build(
        self,
        profiles: list[FilingProfile],
        aliases: Mapping[str, Sequence[str]],
        listed: Mapping[str, Sequence[str]],
    ) -> None:
        groups = _Groups()
        ids: dict[str, list[str]] = {}  # identity key -> filing ids
        ciks: dict[str, str] = {}
        for p in profiles:
            if not (p.company or p.ticker or p.cik or p.legal_name):
                continue
            cik = self._reference_cik(p)
            ciks[p.filing_id] = cik
            keys = [f"cik:{cik}"] if cik else []
            keys += [f"ticker:{t}" for t in p.all_tickers]
            keys += [f"file:{n}" for n in p.file_numbers]
            keys += [f"name:{k}" for n in p.names if (k := _name_key(n))]
            groups.find(p.filing_id)
            for k in keys:
                ids.setdefault(k, []).append(p.filing_id)
        for fids in ids.values():
            for fid in fids[1:]:
                groups.union(fids[0], fid)
        # Renames the alias file lists: a listed alias that is another filing's name is that company's old name.
        for target, names in listed.items():
            linked = ids.get(f"name:{_name_key(target)}") or ids.get(f"ticker:{target.upper()}") or []
            for alias in names:
                for fid in ids.get(f"name:{_name_key(alias)}", []):
                    if linked:
                        groups.union(linked[0], fid)
        by_root: dict[str, list[FilingProfile]] = {}
        for p in profiles:
            if p.filing_id in ciks:
                by_root.setdefault(groups.find(p.filing_id), []).append(p)
        for members in by_root.values():
            self._add_company(members, [ciks[p.filing_id] for p in members])
        first_words: set[str] = set()
        for key, entry in self.companies.items():
            for name in entry.names:
                words = without_legal_form(name_tokens(name))
                first_words.update(words[:1])
                for w in words[1:]:
                    if len(w) >= 4 and w.isalpha() and w not in ORDINARY_WORDS and w not in GENERIC_WORDS:
                        self._later_words.setdefault(w, set()).add(key)
        for w in first_words:  # a word that starts another company's name is that company's more than this one's
            self._later_words.pop(w, None)
        for key, entry in self.companies.items():
            for name in entry.names:
                former = name in self._former.get(key, ())
                for derived in derived_aliases(name):
                    self._add_alias(key, derived, "former" if former and derived.kind == "name" else derived.kind)
            for word in ticker_word_aliases(entry.names, entry.tickers):
                self._add_alias(key, word, word.kind)
            for ticker in entry.tickers:
                self._tickers.setdefault(ticker, key)
        self._add_mapped(listed, "listed", warn=False)
        self._add_mapped(aliases, "alias", warn=True)
        self._resolve_conflicts()

    def _add_company(self, members: list[FilingProfile], ciks: list[str]) -> None:
        members.sort(key=lambda p: (p.period_end or "", p.filing_id))
        cik = max(set(c for c in ciks if c), key=ciks.count, default="")
        names = [n for p in members for n in (p.company, p.legal_name) if n]
        former = [n for p in members for n in p.former_names]
        known = self.reference.get(cik) if (self.reference is not None and cik) else None
        if known is not None:
            names.append(known.name)
        display = members[-1].company or members[-1].legal_name or (known.name if known else "") or members[-1].ticker
        key = f"cik:{cik}" if cik else " ".join(without_legal_form(name_tokens(display))) or display.lower()
        while key in self.companies:
            key += "+"
        tickers = [t for p in members for t in p.all_tickers]
        if known is not None:
            tickers += list(known.tickers)
        entry = CompanyEntry(
            key=key,
            name=display,
            tickers=tuple(dict.fromkeys(tickers)),
            filing_ids=[p.filing_id for p in members],
            cik=cik,
            names=tuple(dict.fromkeys(names + former)),
        )
        self.companies[key] = entry
        self._former[key] = tuple(n for n in dict.fromkeys(former) if n not in names)
        self._indexed_ciks.update(c for c in ciks if c)
        for p in members:
            self.key_of_filing[p.filing_id] = key

    def _add_alias(self, key: str, alias: Alias, how: str) -> None:
        table = self._initialisms if alias.case == "upper" else self._aliases
        entries = table.setdefault(alias.key, [])
        if any(e.key == key and e.alias.strength >= alias.strength for e in entries):
            return
        entries[:] = [e for e in entries if e.key != key]
        entries.append(_AliasEntry(key, alias, how))
        self._max_tokens = max(self._max_tokens, len(alias.text.split()))

    def _resolve_target(self, target: str) -> list[str]:
        if target in self.key_of_filing:
            return [self.key_of_filing[target]]
        if target.upper() in self._tickers:
            return [self._tickers[target.upper()]]
        digits = re.sub(r"\D", "", target)
        if digits and digits == target.strip() and f"cik:{digits.zfill(10)}" in self.companies:
            return [f"cik:{digits.zfill(10)}"]
        if self._by_name_key is None:
            self._by_name_key = {}
            for k, e in self.companies.items():
                for n in e.names:
                    keys = self._by_name_key.setdefault(_name_key(n), [])
                    if k not in keys:
                        keys.append(k)
        return list(self._by_name_key.get(_name_key(target), []))

    def _add_mapped(self, mapping: Mapping[str, Sequence[str]], how: str, warn: bool) -> None:
        for target, extra in mapping.items():
            keys = self._resolve_target(target)
            if not keys:
                if warn:
                    logger.warning(
                        "Alias target {target!r} names no indexed company; its aliases are ignored", target=target
                    )
                continue
            for key in keys:
                for text in extra:
                    alias = Alias(text, compact(text), "alias")
                    if alias.key:
                        self._add_alias(key, alias, how)

    def _resolve_conflicts(self) -> None:
        # One compact form naming several companies keeps only the strongest: "mgm" is MGM Holdings' name and MGM
        # Resorts' first word, so it is MGM Holdings'. Equally strong ones all stay: the question is ambiguous,
        # and the period it names decides among their filings (filing_ranking).
        for table in (self._aliases, self._initialisms):
            for k, entries in table.items():
                best = max(e.alias.strength for e in entries)
                table[k] = [e for e in entries if e.alias.strength == best]

    # lookup ---------------------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.companies)

    def find(self, question: str) -> list[CompanyMention]:
        """Companies named in ``question``: aliases (names, initialisms, abbreviations, listed and user aliases) and
        tickers; fuzzy names only when neither hit."""
        tokens = self._tokens(question)
        found = self._exact(question, tokens) + self._initialism_hits(question) + self._ticker_hits(question)
        if all(m.strength <= 1 for m in found):  # nothing, or only first words: a misspelt full name may be there
            found += self._fuzzy(question, tokens)
        if not found:
            found = self._token_overlap(question, tokens)
        return self._non_overlapping(found)

    def _token_overlap(self, question: str, tokens: list[tuple[str, int, int]]) -> list[CompanyMention]:
        """A capitalized word that is a distinctive later word of one indexed company's name ("Heinz" of "Kraft
        Heinz", "Blizzard" of "Activision Blizzard"): not an ordinary, generic or legal-form word, and of no other
        indexed company's name. Only when nothing else matched."""
        found: list[CompanyMention] = []
        for word, start, end in tokens:
            keys = self._later_words.get(word)
            if keys and len(keys) == 1 and question[start].isupper():
                key = next(iter(keys))
                found.append(self._mention(question[start:end], start, end, key, word, "token"))
        return found

    @staticmethod
    def _tokens(question: str) -> list[tuple[str, int, int]]:
        out: list[tuple[str, int, int]] = []
        for m in re.finditer(r"[^\W_]+", question):
            # The possessive "s" of "Best Buy's" is not part of the name.
            if m.group(0) in ("s", "S") and m.start() > 0 and question[m.start() - 1] in "'’":
                continue
            word = fold(m.group(0))
            # "3M" is "3" and "m", as names are tokenized
            for part in re.finditer(r"\d+(?:st|nd|rd|th)?|[^\W\d_]+", word):
                out.append((part.group(0), m.start() + part.start(), m.start() + part.end()))
        return out

    @staticmethod
    def _case_ok(alias: Alias, span: str) -> bool:
        if alias.case == "capitalized":
            return span[:1].isupper() or span[:1].isdigit()
        return True

    def _exact(self, question: str, tokens: list[tuple[str, int, int]]) -> list[CompanyMention]:
        found: list[CompanyMention] = []
        for i in range(len(tokens)):
            key = ""
            for j in range(i, min(len(tokens), i + self._max_tokens + 2)):
                key += tokens[j][0]
                for e in self._aliases.get(key, ()):
                    start, end = tokens[i][1], tokens[j][2]
                    span = question[start:end]
                    if self._case_ok(e.alias, span):
                        found.append(self._mention(span, start, end, e.key, e.alias.text, e.how))
        return found

    def _initialism_hits(self, question: str) -> list[CompanyMention]:
        if not self._initialisms:
            return []
        found: list[CompanyMention] = []
        for m in _INITIALISM.finditer(question):
            raw = m.group("i")
            key = re.sub(r"\s", "", raw).replace("n", "&") if re.search(r"[A-Z]n[A-Z]", raw) else raw
            key = re.sub(r"\s", "", key).lower()
            for e in self._initialisms.get(key, ()):
                found.append(self._mention(raw, m.start(), m.end(), e.key, e.alias.text, e.how))
        return found

    def _ticker_hits(self, question: str) -> list[CompanyMention]:
        if not self._tickers:
            return []
        found: list[CompanyMention] = []
        for m in _SYMBOL_IN_TEXT.finditer(question):
            ticker = m.group("t")
            if ticker not in self._tickers:
                continue
            if (ticker in _AMBIGUOUS_TICKERS or len(ticker) == 1) and not (
                m.group("cash") or _TICKER_CONTEXT.search(question[max(0, m.start() - 20) : m.start()])
            ):
                continue
            found.append(self._mention(m.group(0), m.start(), m.end(), self._tickers[ticker], ticker, "ticker"))
        return found

    def _fuzzy(self, question: str, tokens: list[tuple[str, int, int]]) -> list[CompanyMention]:
        found: list[CompanyMention] = []
        for i in range(len(tokens)):
            key = ""
            words: list[str] = []
            for j in range(i, min(len(tokens), i + min(self._max_tokens, 6))):
                key += tokens[j][0]
                words.append(tokens[j][0])
                if len(key) < _FUZZY_MIN_LEN - 1 or all(w in ORDINARY_WORDS or w in CONNECTORS for w in words):
                    continue
                start, end = tokens[i][1], tokens[j][2]
                capitalized = question[start].isupper()
                for alias_key, e in self._fuzzy_by_first.get(key[0], ()):
                    # An alias of ordinary words, an initialism or an abbreviation is corrected only capitalized.
                    strict = e.alias.case == "upper" or (e.alias.case == "capitalized" and e.alias.kind != "short")
                    if not capitalized and (strict or len(alias_key) < _FUZZY_LOWERCASE_MIN_LEN):
                        continue
                    limit = _fuzzy_limit(len(alias_key))
                    d = osa_distance(key, alias_key, limit)
                    if 0 < d <= limit:
                        found.append(self._mention(question[start:end], start, end, e.key, e.alias.text, "fuzzy", d))
        return found

    def _mention(
        self, text: str, start: int, end: int, key: str, alias: str, how: str, distance: int = 0
    ) -> CompanyMention:
        return CompanyMention(text, start, end, key, self.companies[key].name, alias, how, distance)

    @staticmethod
    def _non_overlapping(found: list[CompanyMention]) -> list[CompanyMention]:
        """Longest, most certain spans first; a span inside a kept one is dropped (unless it is the same span).

        The same span naming several companies keeps those of the strongest alias kind (an exact ticker beats any
        alias: a symbol written as such identifies one listed company, while "MGM" as a word is only part of "MGM
        Holdings"); equally strong ones all stay: the question is ambiguous and the period decides."""
        # A misspelt whole name beats an exact first word inside it: an edit costs as much as four characters.
        ranked = sorted(found, key=lambda m: (-(m.end - m.start - 4 * m.distance), m.distance, -m.strength, m.start))
        kept: list[CompanyMention] = []
        for m in ranked:
            clash = [k for k in kept if m.start < k.end and k.start < m.end]
            if any((k.start, k.end) != (m.start, m.end) or k.key == m.key or k.strength > m.strength for k in clash):
                continue
            kept.append(m)
        return sorted(kept, key=lambda m: m.start)

    # known companies the index lacks ---------------------------------------------------------------------------------

    def find_known(self, question: str, skip: Sequence[tuple[int, int]] = ()) -> list[KnownMention]:
        """Companies of the reference table named in ``question`` (a capitalized name, or a ticker written as one)
        that are not indexed; spans overlapping ``skip`` (the indexed companies found) are not read."""
        if self.reference is None:
            return []
        ref = self.reference
        tokens = self._tokens(question)
        found: list[KnownMention] = []

        def free(start: int, end: int) -> bool:
            return not any(start < e and s < end for s, e in skip)

        for i in range(len(tokens)):
            if not question[tokens[i][1]].isupper() and not question[tokens[i][1]].isdigit():
                continue
            key = ""
            for j in range(i, min(len(tokens), i + 6)):
                key += tokens[j][0]
                start, end = tokens[i][1], tokens[j][2]
                if _PERIOD_OR_FORM.fullmatch(question[start:end]):
                    continue
                for cik in ref.by_name.get(key, ()):
                    company = ref.by_cik[cik]
                    if cik not in self._indexed_ciks and free(start, end):
                        found.append(
                            KnownMention(question[start:end], start, end, company.name, company.ticker, cik, "name")
                        )
        for m in _SYMBOL_IN_TEXT.finditer(question):
            ticker = m.group("t")
            known = ref.by_symbol(ticker)
            if known is None or known.cik in self._indexed_ciks or not free(m.start(), m.end()):
                continue
            written_as_ticker = bool(
                m.group("cash") or _TICKER_CONTEXT.search(question[max(0, m.start() - 20) : m.start()])
            )
            if not written_as_ticker and (len(ticker) < 3 or ticker in _AMBIGUOUS_TICKERS or ticker in _FINANCE_WORDS):
                continue
            found.append(KnownMention(m.group(0), m.start(), m.end(), known.name, ticker, known.cik, "ticker"))
        # longest first, one company per span
        found.sort(key=lambda k: (-(k.end - k.start), k.start))
        kept: list[KnownMention] = []
        for k in found:
            if not any(k.start < o.end and o.start < k.end for o in kept):
                kept.append(k)
        return sorted(kept, key=lambda k: k.start)


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
