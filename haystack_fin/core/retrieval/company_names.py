"""How people write company names: the aliases general rules derive from a legal name.

From "The Procter & Gamble Company" the rules give "procter & gamble" (legal form dropped), "P&G", "PnG" (initialism
with and without "&"/"n"); from "American Express Company" "AmEx" (the first syllable of each word); from "3M
Company" "three m" (numbers as words and digits); from "Adobe Systems Incorporated" "adobe" (generic words dropped);
from "International Business Machines Corporation" "IBM" (acronym of the expansion); from "MGM Resorts
International" the first word "mgm" (a weak alias: other companies may share it). Nothing here knows a particular
company: names that no rule derives (brands, renames) are in ``haystack_fin/data/company_aliases.yaml``.

Aliases are compared "compact": folded to lower case without accents, spaces and punctuation, so "Coca-Cola",
"coca cola" and "CocaCola" agree. Each alias has a ``strength``: 3 for a whole name (or a name with only legal-form
and generic words dropped, or a listed alias), 2 for an initialism or a syllable abbreviation, 1 for a first word.
When one compact form names several companies, only those of the greatest strength keep it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Ordinary English and finance words. A company alias made only of them ("Target", "Visa", "Best Buy") must be
# capitalized in the question, a first-word alias made of one ("best" from Best Buy, "american" from American
# Express) is not generated, and fuzzy matching never "corrects" them.
ORDINARY_WORDS = _words(
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
# Legal forms: what follows a company's own name ("Best Buy Co., Inc.").
LEGAL_FORMS = _words(
    "inc incorporated corp corporation co company companies cos ltd limited plc llc lp llp nv sa ag se spa bv"
    " sab cv de lc pc"
)
# Generic words a company's everyday name drops ("Adobe Systems Incorporated" -> "Adobe", "Verizon Communications"
# -> "Verizon", "Wal-Mart Stores" -> "Wal-Mart"): the corporate-structure and line-of-business words that end
# legal names. Dropped only from the end of a name, and never down to nothing.
GENERIC_WORDS = _words(
    """
    holdings holding group international intl worldwide global systems technologies technology industries
    enterprises brands stores communications companies partners the and com
    """
)
CONNECTORS = _words("and of the de du la")

_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"]
_UNITS += ["twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINAL_WORDS = {"1st": "first", "2nd": "second", "3rd": "third", "4th": "fourth", "5th": "fifth"}


def _number_word(n: int) -> str:
    """0-99 in words, as names write them ("21" -> "twenty one"; the hyphen of "Twenty-One" is a space here)."""
    if n < 20:
        return _UNITS[n]
    return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _UNITS[n % 10])


_NUMBER_WORDS = {str(n): _number_word(n) for n in range(100)} | {"100": "hundred", "1000": "thousand"}
_NUMBER_WORDS |= _ORDINAL_WORDS
_WORD_NUMBERS = {w: d for d, w in _NUMBER_WORDS.items()}

STRENGTH = {"name": 3, "alias": 3, "former": 3, "initialism": 2, "abbreviation": 2, "short": 1}


def fold(text: str) -> str:
    """Lower case without accents, typographic apostrophes made plain."""
    if not text.isascii():  # most names are ASCII: the decomposition is only needed for the others
        text = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return text.lower().replace("’", "'")


# EDGAR's conformed names carry a state or form tag: "PEOPLES FINANCIAL CORP /MS/", "... LTD/ADR".
_EDGAR_TAG = re.compile(r"/(?:[a-z]{2,3}/|adr\b|new/?)")
_INITIAL_DOTS = re.compile(r"\b([a-z])\.(?=[a-z]\.)")  # "l.p." -> "lp.", "n.v." -> "nv."
_POSSESSIVE = re.compile(r"'s\b")
_DIGIT_LETTERS = re.compile(r"(?<=\d)(?=[a-z])(?!(?:st|nd|rd|th)\b)|(?<=\b[a-z])(?=\d)")
_TOKEN = re.compile(r"[^\W_]+")
_HAS_DIGIT = re.compile(r"\d")


def name_tokens(name: str, drop_ampersand: bool = False) -> list[str]:
    """Word tokens of a name: folded, "&" read as "and" (or dropped), possessive "'s" and dots of initials
    removed, digits split from letters ("3M" -> "3", "m")."""
    s = fold(name)
    if "/" in s:
        s = _EDGAR_TAG.sub(" ", s)
    if "." in s:
        s = _INITIAL_DOTS.sub(r"\1", s)
    if "'" in s:
        s = _POSSESSIVE.sub("", s)
    s = s.replace("&", " " if drop_ampersand else " and ")
    if _HAS_DIGIT.search(s):
        s = _DIGIT_LETTERS.sub(" ", s)
    return _TOKEN.findall(s)


def compact(text: str) -> str:
    """The comparison form of an alias or a question span: folded tokens joined without spaces."""
    return "".join(name_tokens(text, drop_ampersand=True))


def _strip_the(tokens: list[str]) -> list[str]:
    return tokens[1:] if len(tokens) > 1 and tokens[0] == "the" else tokens


def without_legal_form(tokens: list[str]) -> list[str]:
    t = _strip_the(list(tokens))
    while len(t) > 1 and t[-1] in LEGAL_FORMS:
        t.pop()
    while len(t) > 1 and t[-1] == "and":  # "jpmorgan chase and" after "co" went
        t.pop()
    return t


def base_tokens(tokens: list[str]) -> list[str]:
    """A name without "the", legal forms and generic words at its end: the name people use."""
    t = without_legal_form(tokens)
    while len(t) > 1 and (t[-1] in LEGAL_FORMS or t[-1] in GENERIC_WORDS):
        t.pop()
    return t


def company_key(name: str) -> str:
    """Grouping key of a company name: "BEST BUY CO., INC." and "Best Buy Holdings Inc." -> "best buy"."""
    return " ".join(base_tokens(name_tokens(name)))


def names_whole_company(mention: str, company: str) -> bool:
    """Whether ``mention`` is all of ``company``'s name but its legal form: "Best Buy" is all of "Best Buy Co.,
    Inc." but not of "Best Buy Holdings Inc.". Compared without spaces and punctuation."""
    said = "".join(_strip_the(name_tokens(mention)))
    return bool(said) and said == "".join(without_legal_form(name_tokens(company)))


def company_aliases(name: str) -> list[tuple[str, str]]:
    """(alias, kind) of a company name as the ranker drops them from a question: the full name, the name without
    legal form and generic words ("name") and its first word ("short"); e.g. "MGM RESORTS INTERNATIONAL" -> mgm
    resorts international, mgm resorts, mgm. ``derived_aliases`` has every rule."""
    out: list[tuple[str, str]] = []

    def add(tokens: list[str], kind: str) -> None:
        alias = " ".join(tokens)
        if alias and all(alias != a for a, _ in out):
            out.append((alias, kind))

    for drop in (False, True):
        full = _strip_the(name_tokens(name, drop))
        base = base_tokens(full)
        add(full, "name")
        add(without_legal_form(full), "name")
        add(base, "name")
        if len(base) > 1 and _short_ok(base[0]):
            add([base[0]], "short")
    camel = _camel_head(name)
    if camel:
        add([camel], "short")
    return out


def _short_ok(word: str) -> bool:
    return len(word) >= 3 and not word.isdigit() and word not in ORDINARY_WORDS and word not in CONNECTORS


_CAMEL_LEGAL = re.compile(r"^(?P<head>[A-Z][a-z]+(?:[A-Z][a-z]+)*?)(?P<tail>Co|Corp|Inc)$")


def _camel_head(name: str) -> str:
    """ "PepsiCo, Inc." -> "pepsi": a one-word name that ends in a legal form written camel-case."""
    words = [w.strip(",.;") for w in name.split()]
    heads = [m.group("head") for w in words if (m := _CAMEL_LEGAL.match(w))]
    return fold(heads[0]) if len(heads) == 1 and len(heads[0]) >= 4 else ""


@dataclass(frozen=True)
class Alias:
    """One way of writing a company's name. ``key`` is the compact form compared with questions; ``case`` says how
    the question must write it: "any", "capitalized" (ordinary words: "Target") or "upper" (initialisms: "IBM",
    "J&J", "JnJ")."""

    text: str
    key: str
    kind: str
    case: str = "any"

    @property
    def strength(self) -> int:
        return STRENGTH.get(self.kind, 1)


def _number_variants(tokens: list[str]) -> list[list[str]]:
    """The tokens with numbers written as words, or number words as digits ("3 m" <-> "three m")."""
    if not any(t in _NUMBER_WORDS or t in _WORD_NUMBERS for t in tokens):
        return []
    as_words = [w for t in tokens for w in _NUMBER_WORDS.get(t, t).split()]
    as_digits = [_WORD_NUMBERS.get(t, t) for t in tokens]
    return [v for v in (as_words, as_digits) if v != tokens]


_VOWELS = "aeiouy"


def _syllables(word: str) -> list[str]:
    """The first syllable of a word as abbreviations cut it: "american" -> "am", "express" -> "ex", "federal" ->
    "fed"."""
    out = []
    for vowels in (_VOWELS, "aeiou"):  # "y" read as a vowel ("Sys") and as a consonant ("Kymer")
        m = re.match(rf"[^{vowels}]*[{vowels}]+[^{vowels}]", word)
        if m and m.end() < len(word) and m.group() not in out:
            out.append(m.group())
    return out


def initialisms(tokens: list[str]) -> list[str]:
    """Initialism keys of a name's words ("procter and gamble" -> "p&g", "pg"; "bank of america" -> "bofa", "boa";
    "international business machines" -> "ibm"). A two-letter one only with its "&": "PG" alone is a ticker's
    business, and two capitals are too often something else."""
    words = [t for t in tokens if t not in ("the",)]
    # Initialisms of words: "PG&E" is already one, and its "pg and e" has none.
    if len(words) < 2 or not all(w.isalpha() and (len(w) >= 3 or w in CONNECTORS) for w in words):
        return []
    keys: list[str] = []
    letters = "".join(w[0] for w in words if w not in CONNECTORS)
    n_letters = len(letters)
    if "and" in words and n_letters >= 2:
        keys.append("".join("&" if w == "and" else (w[0] if w not in CONNECTORS else "") for w in words))
    if "of" in words and n_letters >= 2:
        keys.append("".join("of" if w == "of" else (w[0] if w not in CONNECTORS else "") for w in words))
        keys.append("".join("o" if w == "of" else (w[0] if w not in CONNECTORS else "") for w in words))
    if n_letters >= 3 or (n_letters == 2 and "and" in words):
        keys.append(letters)
    return [k for k in dict.fromkeys(keys) if len(k.replace("&", "")) >= 2]


def abbreviations(tokens: list[str]) -> list[str]:
    """Syllable abbreviations of a two- or three-word name: the first syllable of the first two words ("american
    express" -> "amex", "federal express" -> "fedex"). At least four letters, and not an ordinary word."""
    words = [t for t in tokens if t not in CONNECTORS and t.isalpha() and len(t) >= 3]
    if not 2 <= len(words) <= 4:
        return []
    out = []
    # the first word with the second or third: "American Express" -> AmEx, "Federal National Mortgage" -> FedNat
    for second in words[1:3]:
        for a in _syllables(words[0]):
            for b in _syllables(second):
                key = a + b
                if len(key) >= 4 and key not in ORDINARY_WORDS and key != words[0] + second:
                    out.append(key)
    return list(dict.fromkeys(out))


def derived_aliases(name: str) -> list[Alias]:
    """Every alias the general rules derive from a company name (see the module docstring)."""
    out: dict[tuple[str, str], Alias] = {}

    def add(text: str, key: str, kind: str, case: str = "any") -> None:
        if not key:
            return
        if case == "any" and all(t in ORDINARY_WORDS or t in CONNECTORS for t in text.split()):
            case = "capitalized"
        old = out.get((key, case))
        if old is None or STRENGTH[kind] > old.strength:
            out[(key, case)] = Alias(text, key, kind, case)

    def add_tokens(tokens: list[str], kind: str) -> None:
        for variant in [tokens, *_number_variants(tokens)]:
            add(" ".join(variant), "".join(variant), kind)

    for drop in (False, True):
        full = _strip_the(name_tokens(name, drop))
        add_tokens(full, "name")
        add_tokens(without_legal_form(full), "name")
        base = base_tokens(full)
        add_tokens(base, "name")
        if len(base) > 1 and _short_ok(base[0]):
            add(base[0], base[0], "short", "capitalized")  # a first word alone is weak: written as a name
    plain = without_legal_form(_strip_the(name_tokens(name)))
    for words in (plain, base_tokens(plain)):
        for key in initialisms(words):
            add(key.upper(), key, "initialism", "upper")
        for key in abbreviations(words):
            add(key, key, "abbreviation", "capitalized")
    camel = _camel_head(name)
    if camel:
        add(camel, camel, "short", "capitalized")
    return list(out.values())


def ticker_word_aliases(names: Iterable[str], tickers: Iterable[str]) -> list[Alias]:
    """A name's first word that is also the company's ticker is its everyday name ("Meta" of Meta Platforms,
    META), even when the word is one ``derived_aliases`` does not take alone ("Best" of Best Buy, BBY): a
    company that trades under the word answers to it. Written capitalized, as a name."""
    symbols = {fold(t) for t in tickers}
    out: dict[str, Alias] = {}
    for name in names:
        words = without_legal_form(_strip_the(name_tokens(name)))
        if len(words) > 1 and len(words[0]) >= 3 and words[0].isalpha() and words[0] in symbols:
            out.setdefault(words[0], Alias(words[0], words[0], "short", "capitalized"))
    return list(out.values())


def osa_distance(a: str, b: str, limit: int) -> int:
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
