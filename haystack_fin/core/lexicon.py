"""Financial lexicon: synonym clusters of financial terms, and the term matchers FLAM routing needs.

FinGEAR's FLAM routes a question to the SEC Items whose text mentions the question's financial terms most. This
module holds the lexicon (clusters of surface terms naming one concept, each with an optional prior over the Items
where the concept is usually reported) and two matchers:

- ``Lexicon.find_terms``: the terms of a question, longest-first and non-overlapping, tolerant to typos;
- ``Lexicon.count_cluster_terms``: per-cluster term counts over whole Items at indexing time (exact and normalized
  matches only, one token-trie walk: a 100k-word 10-K takes a fraction of a second).

Terms and text go through the same ``normalize_term``, so "Property, Plant & Equipment" in a filing matches
"property, plant and equipment" in the lexicon and "Expenses" matches "expense".

Term policy: a normalized term belongs to exactly one cluster. Building a lexicon with a term in two clusters is an
error (``on_conflict="error"``) or keeps the first cluster's claim (``"skip"``, recorded in ``Lexicon.conflicts``);
merging (FinRAD rows, user clusters) adds a cluster's new terms to the existing cluster it overlaps.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from importlib import resources
from itertools import chain
from pathlib import Path
from typing import Any, Literal

from haystack_fin.core.log import get_logger
from haystack_fin.core.validation import check_int

logger = get_logger(__name__)

MatchType = Literal["exact", "normalized", "fuzzy"]
ConflictPolicy = Literal["error", "skip"]

# A token is a run of letters/digits (apostrophes inside kept so "company's" is one token) or an ampersand, which
# is a word in "R&D", "SG&A", "PP&E" and becomes "and". Every other character separates tokens.
_TOKEN_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*|[&＆﹠]")
_POSSESSIVE_RE = re.compile(r"['’]s$")
_SLUG_RE = re.compile(r"[^a-z0-9]+")

# Plural folding is deliberately crude (no stemmer dependency); these words would fold wrongly or inconsistently.
_PLURAL_EXCEPTIONS = {
    "series": "series",
    "species": "species",
    "news": "news",
    "lives": "life",
    "movies": "movie",
    "cookies": "cookie",
    "calories": "calorie",
}

# Terminal marker inside the token trie; normalized tokens are never empty, so "" cannot collide with a token.
_END = ""

_TYPE_RANK = {"exact": 0, "normalized": 1, "fuzzy": 2}


def _fold_plural(word: str) -> str:
    """Map a plural to its singular well enough that term and text agree ("liabilities" -> "liability")."""
    if len(word) <= 3 or word[-1] != "s" or word.endswith(("ss", "us", "is")):
        return word
    if word in _PLURAL_EXCEPTIONS:
        return _PLURAL_EXCEPTIONS[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    return word[:-1]


@lru_cache(maxsize=262_144)
def normalize_token(raw: str) -> tuple[str, ...]:
    """Normalized token(s) of one raw token; NFKC may split a token ("½" -> "1", "2"), hence a tuple."""
    if raw.isascii() and raw.isalnum():  # the overwhelmingly common case, without the NFKC round trip
        return (_fold_plural(raw.lower()),)
    text = unicodedata.normalize("NFKC", raw).lower()
    if "'" in text or "’" in text:
        text = _POSSESSIVE_RE.sub("", text).replace("'", "").replace("’", "")
    return tuple("and" if part == "&" else _fold_plural(part) for part in _TOKEN_RE.findall(text))


def raw_tokens(text: str) -> list[str]:
    """The raw tokens ``normalize_term`` reads: runs of letters and digits (with inner apostrophes), and "&"."""
    return _TOKEN_RE.findall(text)


def _normalized_tokens(text: str) -> list[str]:
    return list(chain.from_iterable(map(normalize_token, _TOKEN_RE.findall(text))))


def normalize_term(text: str) -> str:
    """Normalize a term or a text for matching: the same function is applied to lexicon terms and to filings.

    Unicode NFKC, lower case, possessive "'s" dropped, "&" -> "and", every other non-alphanumeric character
    separates words, single spaces, and plural folding of words longer than three letters ("expenses" ->
    "expense", "liabilities" -> "liability", "taxes" -> "tax"; words ending in "ss", "us", "is" are kept).

    >>> normalize_term("Property, Plant & Equipment")
    'property plant and equipment'
    >>> normalize_term("Shareholders' Equity")
    'shareholder equity'
    """
    return " ".join(_normalized_tokens(text))


def _tokenize_with_spans(text: str) -> tuple[list[str], list[tuple[int, int]], list[str]]:
    """Normalized tokens, the character span of the raw token each came from, and that raw token (lower case)."""
    tokens: list[str] = []
    spans: list[tuple[int, int]] = []
    raw_tokens: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        span = match.span()
        normalized = normalize_token(match.group())
        raw = match.group().lower() if len(normalized) == 1 else None
        for token in normalized:
            tokens.append(token)
            spans.append(span)
            raw_tokens.append(raw or token)
    return tokens, spans, raw_tokens


def _plain_words(text: str) -> str:
    """Lower-case words without plural folding or '&' -> 'and': how a term reads before normalization."""
    return " ".join(t.lower() for t in _TOKEN_RE.findall(text))


def _surface_key(term: str) -> str:
    """A surface term "as written": lower case, whitespace collapsed, punctuation kept."""
    return " ".join(term.lower().split())


def similarity(a: str, b: str) -> float:
    """Normalized indel similarity in [0, 1]: ``2 * LCS(a, b) / (len(a) + len(b))`` (rapidfuzz's ``ratio`` / 100).

    One substitution costs two edits, so at 0.9 an 11-letter word tolerates one dropped or added letter
    ("expenditres") and a 10-letter word one substitution.
    """
    if a == b:
        return 1.0
    total = len(a) + len(b)
    if not a or not b:
        return 0.0
    previous = [0] * (len(b) + 1)
    for char_a in a:
        current = [0]
        for j, char_b in enumerate(b):
            current.append(previous[j] + 1 if char_a == char_b else max(previous[j + 1], current[j]))
        previous = current
    return 2.0 * previous[-1] / total


@dataclass(frozen=True)
class TermCluster:
    """Surface terms naming one financial concept.

    ``terms`` are lower-case surface forms as they are written in filings (punctuation kept, e.g. "pp&e");
    matching normalizes them. ``items`` is a prior over where the concept is reported, per form:
    ``{"10-K": ["7", "8"], "10-Q": ["I-2", "I-1"]}``, most typical Item first (codes: see the lexicon header).
    ``statements`` names the primary statements a derived metric is computed from (a ratio's inputs), as
    statement cluster ids ("income_statement", "balance_sheet", "cash_flow_statement", ...). ``sections`` are the
    headings under which filings report the concept (note titles such as "income taxes", MD&A subsections such as
    "liquidity and capital resources", the cover page's "securities registered pursuant to section 12(b)"):
    retrieval adds the chunks under such a heading to the candidates and the ranker gives them a prior
    (``haystack_fin.core.retrieval.sections``).
    """

    id: str
    name: str
    category: str
    terms: tuple[str, ...]
    items: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    definition: str = ""
    statements: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "name": self.name, "category": self.category, "terms": list(self.terms)}
        if self.items:
            data["items"] = {form: list(codes) for form, codes in self.items.items()}
        if self.definition:
            data["definition"] = self.definition
        if self.statements:
            data["statements"] = list(self.statements)
        if self.sections:
            data["sections"] = list(self.sections)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TermCluster:
        missing = [key for key in ("id", "terms") if key not in data]
        if missing:
            raise ValueError(f"Lexicon cluster {data!r} lacks {missing}; every cluster needs 'id' and 'terms'.")
        terms = data["terms"]
        if isinstance(terms, str) or not all(isinstance(t, str) for t in terms):
            raise ValueError(f"Cluster {data['id']!r}: 'terms' must be a list of strings, got {terms!r}.")
        items = data.get("items") or {}
        if not isinstance(items, Mapping):
            raise ValueError(f"Cluster {data['id']!r}: 'items' must map a form to a list of Item codes.")
        statements = data.get("statements") or ()
        if isinstance(statements, str) or not all(isinstance(x, str) for x in statements):
            raise ValueError(f"Cluster {data['id']!r}: 'statements' must be a list of statement cluster ids.")
        sections = data.get("sections") or ()
        if isinstance(sections, str) or not all(isinstance(x, str) and x.strip() for x in sections):
            raise ValueError(f"Cluster {data['id']!r}: 'sections' must be a list of non-empty heading titles.")
        return cls(
            id=str(data["id"]),
            name=str(data.get("name") or (terms[0] if terms else data["id"])),
            category=str(data.get("category", "")),
            terms=tuple(terms),
            items={str(form): tuple(str(code) for code in codes) for form, codes in items.items()},
            definition=str(data.get("definition", "")),
            statements=tuple(statements),
            sections=tuple(sections),
        )


@dataclass(frozen=True, slots=True)
class TermMatch:
    """A lexicon term found in a text.

    ``start``/``end`` are token positions (end exclusive) in the normalized token sequence of the text;
    ``start_char``/``end_char`` locate the matched span in the original text. ``term`` is the lexicon's surface
    term, ``text`` the span as written. ``score`` is 1.0 except for fuzzy matches (their similarity).
    """

    term: str
    cluster_id: str
    start: int
    end: int
    match_type: MatchType
    text: str
    start_char: int
    end_char: int
    score: float = 1.0


class Lexicon:
    """Clusters of financial terms with a token trie for longest-first matching.

    Read-only once built (``merge`` returns a new lexicon), so ``load_default()`` can share one instance.

    Usage example:
    ```python
    lexicon = Lexicon.load_default()
    [m.cluster_id for m in lexicon.find_terms("What was FY2018 capex for 3M?")]  # ["capex"]
    lexicon.count_cluster_terms("Net sales rose; capital expenditures fell.")  # {"revenue": 1, "capex": 1}
    ```
    """

    def __init__(
        self,
        clusters: Iterable[TermCluster],
        on_conflict: ConflictPolicy = "error",
        not_typos: Iterable[str] = (),
    ) -> None:
        """
        :param clusters: the clusters; ids must be unique.
        :param on_conflict: what to do when a normalized term is already claimed by another cluster: "error"
            raises ``ValueError``, "skip" keeps the first claim and records ``(term, kept_id, dropped_id)`` in
            ``conflicts``. A cluster left with no terms is dropped.
        :param not_typos: real words that are one edit away from a lexicon word ("divided" / "dividend",
            "throughout" / "throughput"); fuzzy matching never "corrects" them.
        """
        if on_conflict not in ("error", "skip"):
            raise ValueError(f"on_conflict must be 'error' or 'skip', got {on_conflict!r}.")
        self.conflicts: list[tuple[str, str, str]] = []
        self._clusters: list[TermCluster] = []
        self._index_of: dict[str, int] = {}
        self._term_index: dict[str, int] = {}  # normalized term -> cluster index
        self._canonical: dict[str, str] = {}  # normalized term -> first surface term written that way
        self._surface: set[str] = set()
        self._plain_surfaces: dict[str, list[str]] = {}  # normalized term -> its surfaces as unfolded words
        self._trie: dict[str, Any] = {}
        self._longest = 0
        for cluster in clusters:
            self._add(cluster, on_conflict)
        # Fuzzy matching indexes: built on first use, index builds do not pay for them.
        self._vocabulary: frozenset[str] = frozenset(t for key in self._term_index for t in key.split())
        self._not_typos: frozenset[str] = frozenset(normalize_term(w) for w in not_typos) - self._vocabulary
        self._deletion_index: dict[str, set[str]] | None = None
        self._longest_word = max((len(w) for w in self._vocabulary), default=0)
        self._corrections: dict[str, tuple[str, ...]] = {}

    def _add(self, cluster: TermCluster, on_conflict: ConflictPolicy) -> None:
        if cluster.id in self._index_of:
            raise ValueError(f"Duplicate cluster id {cluster.id!r}.")
        index = len(self._clusters)
        kept: list[str] = []
        for term in cluster.terms:
            surface = _surface_key(term)
            key = normalize_term(surface)
            if not key:
                continue
            owner = self._term_index.get(key)
            if owner is not None and owner != index:
                owner_id = self._clusters[owner].id
                if on_conflict == "error":
                    raise ValueError(
                        f"Term {term!r} (normalized {key!r}) is in clusters {owner_id!r} and {cluster.id!r}; "
                        "a normalized term may belong to one cluster only."
                    )
                self.conflicts.append((term, owner_id, cluster.id))
                logger.debug(
                    "Lexicon term {term!r} kept in {owner!r}, dropped from {cluster!r}",
                    term=term,
                    owner=owner_id,
                    cluster=cluster.id,
                )
                continue
            if surface not in kept:
                kept.append(surface)
                self._plain_surfaces.setdefault(key, []).append(_plain_words(surface))
            self._surface.add(surface)
            if owner is None:
                self._term_index[key] = index
                self._canonical[key] = surface
                self._insert(key.split(), index)
        if not kept:
            return
        self._index_of[cluster.id] = index
        self._clusters.append(dataclasses.replace(cluster, terms=tuple(kept)))

    def _insert(self, tokens: list[str], index: int) -> None:
        node = self._trie
        for token in tokens:
            node = node.setdefault(token, {})
        node[_END] = index
        self._longest = max(self._longest, len(tokens))

    # ----------------------------------------------------------------------------------------------- loading

    @classmethod
    def load_default(cls) -> Lexicon:
        """The built-in lexicon (``haystack_fin/data/lexicon.json``), loaded once and shared (it is read-only)."""
        return _load_default()

    @classmethod
    def load(cls, path: str | Path | None = None) -> Lexicon:
        """A lexicon JSON at ``path``, or the built-in lexicon when ``path`` is None or empty."""
        return cls.from_json(path) if path else cls.load_default()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], on_conflict: ConflictPolicy = "error") -> Lexicon:
        """Build from the JSON structure of ``lexicon.json``: ``{"clusters": [{"id", "name", "category",
        "terms", "items"?, "definition"?}, ...], "not_typos"?: [...]}``; other top-level keys (the header) are
        documentation."""
        clusters = data.get("clusters")
        if not isinstance(clusters, list):
            raise ValueError("A lexicon needs a 'clusters' list.")
        not_typos = data.get("not_typos") or ()
        return cls((TermCluster.from_dict(c) for c in clusters), on_conflict=on_conflict, not_typos=not_typos)

    @classmethod
    def from_json(cls, path: str | Path, on_conflict: ConflictPolicy = "error") -> Lexicon:
        """Load a lexicon file in the format of the built-in ``lexicon.json``."""
        with open(path, encoding="utf-8") as handle:
            return cls.from_dict(json.load(handle), on_conflict=on_conflict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"schema_version": 1, "clusters": [c.to_dict() for c in self._clusters]}
        if self._not_typos:
            data["not_typos"] = sorted(self._not_typos)
        return data

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def from_finrad_csv(
        cls,
        path: str | Path,
        merge_default: bool = False,
        base: Lexicon | None = None,
        category: str = "finrad",
        id_prefix: str = "finrad:",
        split_variants: bool = True,
        encoding: str = "utf-8-sig",
    ) -> Lexicon:
        """Load a FinRAD-format CSV (Ghosh et al., 2021: columns ``terms, definitions[, source,
        assigned_readability]``): each row becomes a cluster of its term's variants.

        The first column holds the term. Variants are separated by ";", " / ", a slash inside a single word
        ("revenue/turnover", but not "P/E"), or commas when the pieces read as alternatives ("Revenue, Sales,
        Turnover") rather than one name ("Property, plant and equipment", "Accounts receivable, net"); a
        parenthesized abbreviation ("Earnings before interest and taxes (EBIT)") is a variant too.

        :param path: the CSV file; a header row is recognised by a first cell "term"/"terms".
        :param merge_default: merge the rows into the built-in lexicon (ignored when ``base`` is given).
        :param base: a lexicon to merge into. Rows sharing a term with a base cluster extend that cluster.
        :param category: category of the new clusters.
        :param id_prefix: prefix of the new cluster ids (followed by a slug of the first variant).
        :param split_variants: set False to take every first cell as one term.
        :param encoding: file encoding; the default strips a UTF-8 byte-order mark.
        """
        clusters: list[TermCluster] = []
        used_ids: set[str] = set()
        with open(path, encoding=encoding, newline="") as handle:
            rows = list(csv.reader(handle))
        definition_column = 1
        if rows and rows[0] and rows[0][0].strip().lower() in ("term", "terms"):
            header = [cell.strip().lower() for cell in rows[0]]
            for name in ("definitions", "definition"):
                if name in header:
                    definition_column = header.index(name)
            rows = rows[1:]
        for row in rows:
            if not row or not row[0].strip():
                continue
            cell = " ".join(row[0].split())
            variants = split_finrad_term(cell) if split_variants else [cell]
            if not variants:
                continue
            slug = _SLUG_RE.sub("-", variants[0].lower()).strip("-") or "term"
            cluster_id, suffix = f"{id_prefix}{slug}", 2
            while cluster_id in used_ids:
                cluster_id, suffix = f"{id_prefix}{slug}-{suffix}", suffix + 1
            used_ids.add(cluster_id)
            definition = row[definition_column].strip() if len(row) > definition_column else ""
            clusters.append(
                TermCluster(
                    id=cluster_id,
                    name=variants[0],
                    category=category,
                    terms=tuple(v.lower() for v in variants),
                    definition=definition,
                )
            )
        if base is None:
            base = cls.load_default() if merge_default else cls([])
        return base.merge(clusters)

    @classmethod
    def from_term_groups(
        cls, groups: Iterable[Sequence[str]], category: str = "custom", id_prefix: str = "group:"
    ) -> Lexicon:
        """A lexicon from plain groups of synonyms, e.g. the output of ``cluster_terms_by_embedding``."""
        clusters = []
        for number, group in enumerate(groups):
            terms = tuple(_surface_key(t) for t in group if t.strip())
            if terms:
                clusters.append(TermCluster(f"{id_prefix}{number}", terms[0], category, terms))
        return cls(clusters, on_conflict="skip")

    @property
    def not_typos(self) -> frozenset[str]:
        return self._not_typos

    def merge(self, other: Lexicon | Iterable[TermCluster]) -> Lexicon:
        """A new lexicon: this one's clusters plus ``other``'s.

        A cluster of ``other`` that shares a normalized term with an existing cluster adds its new terms to the
        first such cluster (synonyms extend the concept we already have instead of competing with it); a cluster
        with no shared term is added, its id suffixed if taken.
        """
        clusters = list(self._clusters)
        term_lists = [list(c.terms) for c in clusters]
        owner = dict(self._term_index)
        ids = {c.id for c in clusters}
        for cluster in other.clusters if isinstance(other, Lexicon) else other:
            surfaces = [_surface_key(t) for t in cluster.terms]
            keys = [normalize_term(s) for s in surfaces]
            target = next((owner[k] for k in keys if k in owner), None)
            if target is None:
                cluster_id, suffix = cluster.id, 2
                while cluster_id in ids:
                    cluster_id, suffix = f"{cluster.id}-{suffix}", suffix + 1
                ids.add(cluster_id)
                target = len(clusters)
                clusters.append(dataclasses.replace(cluster, id=cluster_id))
                term_lists.append([])
            for surface, key in zip(surfaces, keys, strict=True):
                if key and key not in owner:
                    owner[key] = target
                    term_lists[target].append(surface)
        frozen = [dataclasses.replace(c, terms=tuple(t)) for c, t in zip(clusters, term_lists, strict=True) if t]
        not_typos = self._not_typos | (other.not_typos if isinstance(other, Lexicon) else frozenset())
        return Lexicon(frozen, on_conflict="skip", not_typos=not_typos)

    # ---------------------------------------------------------------------------------------------- accessors

    @property
    def clusters(self) -> tuple[TermCluster, ...]:
        return tuple(self._clusters)

    @cached_property
    def fingerprint(self) -> str:
        """16 hex digits naming this lexicon's content (clusters, terms, categories, not-typos): what was derived
        with one lexicon (entities stored in chunk meta) is recognised as such by a reader with another."""
        text = json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def term_index(self) -> Mapping[str, int]:
        """Normalized term -> index into ``clusters``."""
        return self._term_index

    @property
    def n_terms(self) -> int:
        """Number of distinct normalized terms."""
        return len(self._term_index)

    def __len__(self) -> int:
        return len(self._clusters)

    def __iter__(self) -> Iterator[TermCluster]:
        return iter(self._clusters)

    def __contains__(self, cluster_id: object) -> bool:
        return cluster_id in self._index_of

    def cluster(self, cluster_id: str) -> TermCluster:
        try:
            return self._clusters[self._index_of[cluster_id]]
        except KeyError:
            raise KeyError(f"No lexicon cluster {cluster_id!r}.") from None

    def cluster_of(self, term: str) -> TermCluster | None:
        """The cluster a term belongs to (after normalization), or None."""
        index = self._term_index.get(normalize_term(term))
        return None if index is None else self._clusters[index]

    def item_prior(self, cluster_id: str, form: str) -> tuple[str, ...]:
        """Item codes where the concept is typically reported in ``form`` ("10-K", "10-Q", "8-K"), or ()."""
        return tuple(self.cluster(cluster_id).items.get(form, ()))

    def expand(self, cluster_ids: Iterable[str]) -> list[str]:
        """All surface terms of the given clusters, in cluster order, without duplicates."""
        terms: dict[str, None] = {}
        for cluster_id in cluster_ids:
            terms.update(dict.fromkeys(self.cluster(cluster_id).terms))
        return list(terms)

    # ----------------------------------------------------------------------------------------------- matching

    def _trie_matches(self, tokens: Sequence[str], max_ngram: int) -> list[tuple[int, int, int]]:
        """Every (start, end, cluster index) where a term's normalized tokens occur, up to ``max_ngram`` tokens."""
        trie = self._trie
        n_tokens = len(tokens)
        found: list[tuple[int, int, int]] = []
        for start, token in enumerate(tokens):
            node = trie.get(token)
            end = start + 1
            limit = min(n_tokens, start + max_ngram)
            while node is not None:
                index = node.get(_END)
                if index is not None:
                    found.append((start, end, index))
                if end >= limit:
                    break
                node = node.get(tokens[end])
                end += 1
        return found

    @staticmethod
    def _select_longest(candidates: list[tuple[int, int, Any]], n_tokens: int) -> list[tuple[int, int, Any]]:
        """Non-overlapping matches, longest first (then leftmost); candidates arrive in preference order."""
        if not candidates:
            return []
        order = sorted(range(len(candidates)), key=lambda k: (candidates[k][0] - candidates[k][1], k))
        covered = bytearray(n_tokens)
        chosen: list[tuple[int, int, Any]] = []
        for k in order:
            start, end, payload = candidates[k]
            if any(covered[start:end]):
                continue
            covered[start:end] = b"\x01" * (end - start)
            chosen.append((start, end, payload))
        chosen.sort(key=lambda match: match[0])
        return chosen

    def count_cluster_terms(self, text: str) -> dict[str, int]:
        """Occurrences of each cluster's terms in ``text`` (exact and normalized matches, longest-first,
        non-overlapping: "income tax expense" counts once, not also as "tax expense"). Same matches as
        ``find_terms(text, fuzzy=False)`` without its length cap; clusters with no occurrence are omitted."""
        tokens = _normalized_tokens(text)
        selected = self._select_longest(self._trie_matches(tokens, self._longest), len(tokens))
        counts: dict[str, int] = {}
        for _, _, index in selected:
            cluster_id = self._clusters[index].id
            counts[cluster_id] = counts.get(cluster_id, 0) + 1
        return counts

    def find_terms(
        self,
        text: str,
        fuzzy: bool = True,
        max_ngram: int | None = None,
        min_similarity: float = 0.9,
        min_fuzzy_chars: int = 6,
    ) -> list[TermMatch]:
        """Lexicon terms in ``text``, longest-first and non-overlapping, in text order.

        ``exact``: the span as written (case-insensitive) is a surface term; ``normalized``: equal after
        ``normalize_term``; ``fuzzy``: a span containing an out-of-vocabulary word within ``min_similarity``
        (``similarity``) of a term of at least ``min_fuzzy_chars`` characters ("capital expenditres"). Fuzzy
        candidates come from a single-edit deletion index over the lexicon's words, so the cost does not grow
        with the lexicon; use ``fuzzy=False`` on filing text, where typos are rare and words are many.

        :param max_ngram: longest span considered, in tokens; None (default) = the lexicon's longest term, so that
            find_terms and count_cluster_terms agree. Long terms are Item titles ("management's discussion and
            analysis of financial condition and results of operations" is 11 tokens); the trie walk stops at the
            first unknown continuation, so the cap buys no speed.
        """
        if max_ngram is None:
            max_ngram = max(self._longest, 1)
        check_int("max_ngram", max_ngram)
        tokens, spans, raw_tokens = _tokenize_with_spans(text)
        # Payload: (type rank, -score, cluster index, normalized key or None); sorted so better matches come first.
        candidates: list[tuple[int, int, tuple[int, float, int, str | None]]] = [
            (start, end, (1, -1.0, index, None)) for start, end, index in self._trie_matches(tokens, max_ngram)
        ]
        if fuzzy:
            candidates.extend(self._fuzzy_candidates(tokens, raw_tokens, max_ngram, min_similarity, min_fuzzy_chars))
        candidates.sort(key=lambda c: c[2][:2])
        matches: list[TermMatch] = []
        for start, end, (rank, neg_score, index, key) in self._select_longest(candidates, len(tokens)):
            start_char, end_char = spans[start][0], spans[end - 1][1]
            written = text[start_char:end_char]
            if rank == 2:
                match_type: MatchType = "fuzzy"
                term = self._canonical[key or ""]
            elif _surface_key(written) in self._surface:
                match_type, term = "exact", _surface_key(written)
            else:
                match_type, term = "normalized", self._canonical[" ".join(tokens[start:end])]
            matches.append(
                TermMatch(
                    term=term,
                    cluster_id=self._clusters[index].id,
                    start=start,
                    end=end,
                    match_type=match_type,
                    text=written,
                    start_char=start_char,
                    end_char=end_char,
                    score=-neg_score,
                )
            )
        return matches

    def _fuzzy_candidates(
        self,
        tokens: Sequence[str],
        raw_tokens: Sequence[str],
        max_ngram: int,
        min_similarity: float,
        min_chars: int,
    ) -> list[tuple[int, int, tuple[int, float, int, str | None]]]:
        # A typo makes a word unknown; only spans with an unknown word that is one edit from a lexicon word are
        # tried, by walking the trie with the corrected word in its place.
        alternatives: list[tuple[tuple[str, bool], ...]] = []
        fuzzy_positions: list[int] = []
        for position, token in enumerate(tokens):
            if token in self._vocabulary:
                alternatives.append(((token, False),))
                continue
            corrections = self._corrections_of(token)
            alternatives.append(tuple((c, True) for c in corrections))
            if corrections:
                fuzzy_positions.append(position)
        found: list[tuple[int, int, tuple[int, float, int, str | None]]] = []
        if not fuzzy_positions:
            return found
        n_tokens = len(tokens)
        for start in range(n_tokens):
            # Only starts whose window can reach a corrected word.
            nearest = bisect_left(fuzzy_positions, start)
            if nearest == len(fuzzy_positions) or fuzzy_positions[nearest] >= start + max_ngram:
                continue
            stack: list[tuple[dict[str, Any], int, bool, tuple[str, ...]]] = [(self._trie, start, False, ())]
            while stack:
                node, end, used, path = stack.pop()
                if used and _END in node:
                    key = " ".join(path)
                    if len(key) >= min_chars:
                        # Folding can widen a typo ("liabilites" -> "liabilite" vs "liability"): score the
                        # span as written against the term as written too, and keep the better.
                        written = " ".join(raw_tokens[start:end])
                        score = max(
                            [
                                similarity(" ".join(tokens[start:end]), key),
                                *(similarity(written, plain) for plain in self._plain_surfaces[key]),
                            ]
                        )
                        if score >= min_similarity:
                            found.append((start, end, (2, -score, node[_END], key)))
                if end >= n_tokens or end - start >= max_ngram:
                    continue
                for token, corrected in alternatives[end]:
                    child = node.get(token)
                    if child is not None:
                        stack.append((child, end + 1, used or corrected, (*path, token)))
        return found

    def _fuzzy_index(self) -> dict[str, set[str]]:
        if self._deletion_index is None:
            self._deletion_index = _deletion_index(self._vocabulary)
        return self._deletion_index

    def _corrections_of(self, token: str, limit: int = 3) -> tuple[str, ...]:
        """Lexicon words one insertion, deletion, substitution or transposition away from ``token``."""
        if len(token) < 4 or token.isdigit() or token in self._not_typos:
            return ()
        cached = self._corrections.get(token)
        if cached is not None:
            return cached
        index = self._fuzzy_index()
        candidates = set(index.get(token, ()))
        # Keys are lexicon words and their one-letter deletions, so a token two or more letters longer than the
        # longest word has no candidates; building its deletions anyway is quadratic in its length.
        if len(token) <= self._longest_word + 1:
            for position in range(len(token)):
                candidates.update(index.get(token[:position] + token[position + 1 :], ()))
        ranked = sorted(candidates, key=lambda word: (-similarity(token, word), word))[:limit]
        if len(self._corrections) > 100_000:  # unbounded growth on long-running services
            self._corrections.clear()
        self._corrections[token] = result = tuple(ranked)
        return result


def _deletion_index(vocabulary: Iterable[str]) -> dict[str, set[str]]:
    """Symmetric-deletion index (SymSpell): each word and its single-character deletions -> the word."""
    index: dict[str, set[str]] = {}
    for word in vocabulary:
        if len(word) < 3 or word.isdigit():
            continue
        index.setdefault(word, set()).add(word)
        for position in range(len(word)):
            index.setdefault(word[:position] + word[position + 1 :], set()).add(word)
    return index


@lru_cache(maxsize=1)
def _load_default() -> Lexicon:
    source = resources.files("haystack_fin") / "data" / "lexicon.json"
    with source.open(encoding="utf-8") as handle:
        lexicon = Lexicon.from_dict(json.load(handle))
    lexicon._fuzzy_index()  # the shared instance answers its first question as fast as the next ones
    return lexicon


# ------------------------------------------------------------------------------------------------- FinRAD terms

_PARENTHESES_RE = re.compile(r"\(([^()]*)\)")
_CONJUNCTION_RE = re.compile(r"\s(and|or|&)\s")
_COMMA_QUALIFIERS = {"net", "gross", "total", "inc", "inc.", "ltd", "llc", "the", "etc", "etc.", "n.a.", "other"}


def split_finrad_term(cell: str) -> list[str]:
    """Variants of a FinRAD term cell: "Earnings Before Interest and Taxes (EBIT)" -> [that name, "EBIT"]."""
    variants: list[str] = []
    for inner in _PARENTHESES_RE.findall(cell):
        variants.extend(_split_alternatives(inner))
    main = " ".join(_PARENTHESES_RE.sub(" ", cell).split())
    variants[:0] = _split_alternatives(main)
    seen: set[str] = set()
    unique = []
    for variant in variants:
        key = normalize_term(variant)
        if key and key not in seen:
            seen.add(key)
            unique.append(variant)
    return unique


def _split_alternatives(text: str) -> list[str]:
    pieces: list[str] = []
    for part in re.split(r"\s*;\s*|\s+/\s+", text):
        part = part.strip(" ,")
        if not part:
            continue
        slashed = part.split("/")
        if len(slashed) > 1 and " " not in part and all(len(p) >= 2 for p in slashed):
            pieces.extend(slashed)
            continue
        commas = [p.strip() for p in part.split(",") if p.strip()]
        # "Property, plant and equipment", "Accounts receivable, net" are one name; "Revenue, Sales" are two.
        one_name = len(commas) == 1 or any(
            p.lower() in _COMMA_QUALIFIERS or _CONJUNCTION_RE.search(f" {p.lower()} ") for p in commas[1:]
        )
        pieces.extend([part] if one_name else commas)
    return pieces


# --------------------------------------------------------------------------------------- embedding clustering


def cluster_terms_by_embedding(
    terms: Sequence[str],
    embed_fn: Callable[[list[str]], Any],
    threshold: float = 0.25,
    linkage: Literal["average", "complete", "single"] = "average",
) -> list[list[str]]:
    """Group terms into synonym clusters by agglomerative clustering of their embeddings (cosine distance).

    A way to grow the lexicon from a term list (e.g. FinRAD) with any sentence embedder: ``embed_fn`` maps a list
    of strings to an (n, d) array-like. ``threshold`` is a cosine *distance* (1 - similarity): two clusters merge
    while their ``linkage`` distance is below it. Groups come back in order of their first term; terms keep
    their input order, duplicates (after ``normalize_term``) dropped.
    """
    if not 0.0 <= threshold <= 2.0:
        raise ValueError(f"threshold is a cosine distance in [0, 2], got {threshold}.")
    unique: list[str] = []
    seen: set[str] = set()
    for term in terms:
        key = normalize_term(term)
        if key and key not in seen:
            seen.add(key)
            unique.append(term)
    if len(unique) < 2:
        return [unique] if unique else []

    # scikit-learn takes ~1 s to import: only when clustering is asked for.
    import numpy as np
    from sklearn.cluster import AgglomerativeClustering

    vectors = np.asarray(embed_fn(list(unique)), dtype=float)
    if vectors.ndim != 2 or vectors.shape[0] != len(unique):
        raise ValueError(f"embed_fn returned shape {vectors.shape}; expected ({len(unique)}, dim).")
    labels = AgglomerativeClustering(
        n_clusters=None, metric="cosine", linkage=linkage, distance_threshold=threshold
    ).fit_predict(vectors)
    groups: dict[int, list[str]] = {}
    for term, label in zip(unique, labels, strict=True):
        groups.setdefault(int(label), []).append(term)
    return list(groups.values())
