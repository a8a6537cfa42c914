import dataclasses
import time
from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.document_stores.types import DocumentStore

from haystack_fin.components.dense_filing_scope import nearest_filings
from haystack_fin.core import schema
from haystack_fin.core.retrieval.companies import ALIAS_FILE, CompanyIndex, load_alias_file, may_name_company
from haystack_fin.core.retrieval.company_reference import CompanyReference, load_company_reference
from haystack_fin.core.retrieval.filing_profile import FilingProfile
from haystack_fin.core.retrieval.filing_ranking import ScopeDecision, bound_unscoped, resolve_scope
from haystack_fin.core.retrieval.question_analysis import QuestionAnalysis, analysis_or_own
from haystack_fin.core.validation import check_int, check_ints
from haystack_fin.store_registry import SharedStoreClient, filter_documents_without

logger = logging.getLogger(__name__)

_FILING_NODES = schema.node_type_filter(schema.NodeType.FILING)
_PROFILE_NODES = schema.node_type_filter(schema.NodeType.PROFILE)
# What scope reads of a filing node: its provenance, period, Items and identity, not its FLAM statistics (most of
# its size) or its content; the stores that can (Qdrant Edge) read only these fields.
_PROFILE_FIELDS = (
    *schema.FILING_FIELDS,
    schema.NODE_TYPE,
    schema.ITEMS,
    schema.ITEM_CODES,
    *schema.IDENTITY_FIELDS,
)
_REFERENCES: dict[str, CompanyReference | None] = {}
EDGARTOOLS = "edgartools"


def company_reference(source: str | None) -> CompanyReference | None:
    """The company reference table of ``source`` ("edgartools" or a file path; None: no table), read once per
    process."""
    if source is None:
        return None
    if source not in _REFERENCES:
        _REFERENCES[source] = load_company_reference(None if source == EDGARTOOLS else source)
    return _REFERENCES[source]


def read_profiles(store: Any) -> list[FilingProfile]:
    """Every filing's profile: its profile node (``FilingSplitter.profile_node``, a few small fields), else, for a
    filing indexed before profile nodes existed, its filing node read with only the fields scope needs where the
    store can select them (Qdrant Edge ``include_meta``) and without the FLAM statistics elsewhere.

    Reading thousands of filing nodes costs seconds even field by field (the store reads each whole payload), so a
    store whose every filing has a profile node starts in a time that hardly grows with it."""
    profiles = {p.filing_id: p for p in map(FilingProfile.from_meta, (d.meta for d in _read(store, _PROFILE_NODES)))}
    n_filings = store.count_documents_by_filter(_FILING_NODES) if hasattr(store, "count_documents_by_filter") else -1
    if n_filings == len(profiles) and profiles:
        return list(profiles.values())
    for doc in _read(store, _FILING_NODES):
        profile = FilingProfile.from_meta(doc.meta)
        profiles.setdefault(profile.filing_id, profile)
    return list(profiles.values())


def _read(store: Any, filters: dict[str, Any]) -> list[Any]:
    try:
        return list(store.filter_documents(filters=filters, include_meta=list(_PROFILE_FIELDS)))
    except TypeError:  # a store without field selection
        return filter_documents_without(store, filters, schema.FLAM_STATISTICS)


@component
class FilingScope(SharedStoreClient):
    """Scopes a question to the filings it is about (company, fiscal period, form) before retrieval.

    In an index of many filings, plain retrieval readily answers from another company or, most often, from another
    year of the right company. This component reads the index's ``filing`` nodes (one per filing, written by
    ``FilingSplitter``: meta ``filing_id``, ``company``, ``ticker``, ``form``, ``fiscal_year``, ``fiscal_quarter``,
    ``period_end``, ``period``, ``items`` and the registrant identity ``cik``, ``tickers``, ``file_numbers``,
    ``legal_name``, ``former_names``), groups them into registrants, recognizes the company the question names
    (name, ticker, initialism, abbreviation, listed or user alias, former name, or a small typo), and ranks that
    company's filings by the question's fiscal year, quarter, date and form. The rules are documented in
    ``haystack_fin.core.retrieval.filing_ranking`` and ``companies``; the user's guide is docs/scope.md.

    Outputs the ranked ``filing_ids``, a Haystack ``filters`` dict on ``meta.filing_id`` for any retriever, and a
    JSON-serializable ``scope`` explanation. A question naming a known company the index lacks (the company
    reference table) is scoped to no filing, with a notice naming it and its ticker. A question naming no indexed
    company otherwise is unscoped: every filing id is returned (never an empty scope), with a notice for a name
    nobody knows, and ``scope["reason"]`` says why; in an index of more than
    ``unscoped_max_filings`` filings, only that many are returned, those of the question's nearest chunks first
    (given ``query_embedding``), so such a question does not search the whole index. Works with any Haystack
    document store that implements ``filter_documents`` (Qdrant, InMemory, ...); profiles are read once and cached,
    re-read when they are older than ``refresh_seconds`` (a long-running server sees filings indexed after it
    started without a restart) and on ``refresh=True``.

    Usage example:
    ```python
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_fin.components.filing_scope import FilingScope

    store = InMemoryDocumentStore()
    store.write_documents([
        Document(id="BBY-2023#filing", content="", meta={"node_type": "filing", "filing_id": "BBY-2023",
                 "company": "BEST BUY CO., INC.", "form": "10-K", "fiscal_year": 2023, "period": "FY2023"}),
        Document(id="BBY-2024Q2#filing", content="", meta={"node_type": "filing", "filing_id": "BBY-2024Q2",
                 "company": "BEST BUY CO., INC.", "form": "10-Q", "fiscal_year": 2024, "fiscal_quarter": 2}),
    ])
    scope = FilingScope(document_store=store)
    result = scope.run(query="Is Best Buy's quick ratio healthy as of Q2 FY2024?")
    result["filing_ids"]  # ["BBY-2024Q2"]
    result["filters"]     # {"field": "meta.filing_id", "operator": "in", "value": ["BBY-2024Q2"]}
    ```
    """

    def __init__(
        self,
        document_store: DocumentStore,
        max_filings: int = 3,
        aliases: dict[str, list[str]] | None = None,
        unscoped_max_filings: int | None = 10,
        refresh_seconds: float | None = 30.0,
        unscoped_candidate_filings: int | None = 64,
        aliases_path: str | None = None,
        company_reference: str | None = EDGARTOOLS,
    ) -> None:
        """
        :param document_store: the store holding the ``filing`` nodes (and the chunks the filters select).
        :param max_filings: at most this many filings when the question names a company.
        :param unscoped_max_filings: at most this many filings when the question names none (None: every filing),
            by a vector search for the question over all chunks with ``query_embedding``, else by period and form.
        :param unscoped_candidate_filings: in a store with more filing vectors (``FilingWriter``) than this, that
            vector search reads only the chunks of this many filings, nearest to the question by filing vector,
            so that it never reads every vector of a large store (None: every chunk, whatever the store's size).
        :param aliases: extra names per company, keyed by its name, ticker or a filing id: ``{"THE COCA-COLA
            COMPANY": ["coke"]}``.
        :param refresh_seconds: re-read the filing profiles when the cached ones are older (one read of the filing
            nodes, in the request that finds them old); None = only on ``refresh=True``.
        :param aliases_path: a YAML alias file of your own (``{company: [alias, ...]}``, the format of the shipped
            ``haystack_fin/data/company_aliases.yaml``, which is always loaded); its entries add to ``aliases``.
        :param company_reference: the table of known companies that tells a company the index lacks ("not in the
            indexed filings") from an unknown word (which falls back to the dense filing ranking): "edgartools"
            (SEC's company tickers as the ``edgartools`` package ships them; the ``companies`` extra), a CSV,
            JSON-lines or parquet file with cik, ticker, name columns, or None for none.
        """
        check_int("max_filings", max_filings)
        check_ints(optional=True, unscoped_max_filings=unscoped_max_filings,
                   unscoped_candidate_filings=unscoped_candidate_filings)  # fmt: skip
        if aliases is not None and not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(a, str) for a in v)
            for k, v in aliases.items()
        ):
            raise ValueError(f"aliases must map a company (str) to a list of names, got {aliases!r}")
        if refresh_seconds is not None and (
            isinstance(refresh_seconds, bool) or not isinstance(refresh_seconds, int | float) or refresh_seconds < 0
        ):
            raise ValueError(f"refresh_seconds must be a non-negative number or None, got {refresh_seconds!r}")
        self.document_store = document_store
        self.max_filings = max_filings
        self.aliases = aliases
        self.unscoped_max_filings = unscoped_max_filings
        self.refresh_seconds = refresh_seconds
        self.unscoped_candidate_filings = unscoped_candidate_filings
        self.aliases_path = aliases_path
        self.company_reference = company_reference
        self._listed: dict[str, list[str]] | None = None
        self._reference: CompanyReference | None = None
        self._read_at = 0.0
        self._store: Any = None
        self._profiles: list[FilingProfile] | None = None
        self._index: CompanyIndex | None = None

    def to_dict(self) -> dict[str, Any]:
        # One style across components: every init parameter explicitly; default_to_dict serializes the store.
        return default_to_dict(
            self,
            document_store=self.document_store,
            max_filings=self.max_filings,
            aliases=self.aliases,
            unscoped_max_filings=self.unscoped_max_filings,
            refresh_seconds=self.refresh_seconds,
            unscoped_candidate_filings=self.unscoped_candidate_filings,
            aliases_path=self.aliases_path,
            company_reference=self.company_reference,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FilingScope":
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Attach to the shared store instance, read the alias files, the company reference table and the filing
        profiles once; later calls do nothing.

        :raises ValueError: an alias file or reference table cannot be read (naming the file).
        """
        self._attach_store()  # several components of one query pipeline share one open store
        if self._listed is None:
            listed = load_alias_file(ALIAS_FILE)
            user = load_alias_file(self.aliases_path) if self.aliases_path else {}
            self._user_aliases = {**user, **{k: list(v) for k, v in (self.aliases or {}).items()}}
            self._listed = listed
            self._reference = company_reference(self.company_reference)
        if self._profiles is None:
            self.refresh()

    def refresh(self) -> None:
        """Re-read the filing profiles from the store (after filings were indexed or deleted)."""
        self._attach_store()
        if self._listed is None:
            self.warm_up()
            return
        self._read_at = time.monotonic()
        self._profiles = [p for p in read_profiles(self._store) if p.filing_id]
        self._index = CompanyIndex(self._profiles, self._user_aliases, self._listed, self._reference)
        logger.info(
            "FilingScope: {n_filings} filings of {n_companies} companies",
            n_filings=len(self._profiles),
            n_companies=len(self._index),
        )

    @property
    def profiles(self) -> list[FilingProfile]:
        """The cached filing profiles (read on first use)."""
        if self._profiles is None:
            self.warm_up()
        return list(self._profiles or [])

    @staticmethod
    def _say_what_is_not_there(
        query: str, decision: ScopeDecision, analysed: QuestionAnalysis, explicit: bool
    ) -> ScopeDecision:
        """Drop company notices for capitalized words that name no company ("Domestic" segment). When the question
        names no indexed company: a known company the index lacks ("Apple" asked of a Best Buy store) scopes to no
        filing, with a notice naming it and its ticker; a name nobody knows keeps the dense filing ranking (never
        an empty answer while an indexed filing could fit), with a notice saying so."""
        spans = {(span.start, span.end) for span in analysed.question_scope.company_spans}
        terms = [t.text or t.term for t in analysed.terms]
        known = {k.text: (k.start, k.end) for k in decision.known}

        def keep(u: dict[str, str]) -> bool:
            if u.get("kind") != "company":
                return True
            where = known.get(u.get("text", ""))
            if where is None:
                where = next(((s, e) for s, e in spans if query[s:e] == u.get("text")), None)
            return where is None or may_name_company(query, where[0], where[1], terms)

        unmatched = [u for u in decision.unmatched if keep(u)]
        decision = dataclasses.replace(decision, unmatched=unmatched)
        # Not ``decision.scoped``: an index of one company scopes a question naming no indexed company to that one.
        if explicit or decision.companies:
            return decision
        absent = [u for u in unmatched if u.get("kind") == "company" and u.get("status") == "not_indexed"]
        if absent:
            reason = "no indexed filing matches: " + "; ".join(u["reason"] for u in absent)
            return dataclasses.replace(decision, filing_ids=[], reason=reason, matches=[])
        unknown = [u for u in unmatched if u.get("kind") == "company"]
        if unknown:
            names = ", ".join(repr(u["text"]) for u in unknown)
            reason = f"{decision.reason}; {names} names no indexed or known company: ranked by similarity instead"
            return dataclasses.replace(decision, reason=reason)
        return decision

    @component.output_types(filing_ids=list[str], filters=dict[str, Any], scope=dict[str, Any])
    def run(
        self,
        query: str,
        filing_ids: list[str] | None = None,
        refresh: bool = False,
        analysis: dict[str, Any] | None = None,
        query_embedding: list[float] | None = None,
    ) -> dict[str, Any]:
        """
        Decide which filings ``query`` is about.

        :param query: the question.
        :param filing_ids: an explicit scope chosen by the caller; it overrides the question when non-empty.
        :param refresh: re-read the filing profiles from the store before deciding.
        :param analysis: ``QueryAnalyzer``'s analysis of ``query``: its periods, dates, form hints and 8-K topics
            (the company is still found against the index); without it the question is analysed with the built-in
            lexicon.
        :param query_embedding: the question's vector; an unscoped question in a large index is bounded to the
            filings of its nearest chunks (see ``unscoped_max_filings``).
        :returns: ``filing_ids``: the filings in scope, best first (every filing when unscoped); ``filters``: a
            Haystack filter ``{"field": "meta.filing_id", "operator": "in", "value": filing_ids}`` (``{}``, i.e. no
            restriction, when the store holds no filing nodes); ``scope``: the JSON-serializable explanation (reason,
            recognized companies, parsed periods, per-filing scores and reasons).
        """
        if self._profiles is None:
            self.warm_up()  # a component used outside a Pipeline is not warmed up by anyone else
        elif refresh or (self.refresh_seconds is not None and time.monotonic() - self._read_at > self.refresh_seconds):
            self.refresh()
        analysed = analysis_or_own(query, analysis)
        decision = resolve_scope(
            query,
            self._profiles or [],
            filing_filter=filing_ids,
            max_filings=self.max_filings,
            company_index=self._index,
            question_scope=analysed.question_scope,
            event_topics=analysed.event_topics,
        )
        limit = self.unscoped_max_filings
        if limit is not None and not decision.scoped and len(decision.filing_ids) > limit:
            nearest: list[str] = []
            if query_embedding:
                # Ten chunks per filing kept is enough votes to rank them.
                nearest = nearest_filings(self._store, query_embedding, 10 * limit, self.unscoped_candidate_filings)[0]
            decision = bound_unscoped(decision, nearest, limit)
        decision = self._say_what_is_not_there(query, decision, analysed, bool(filing_ids))
        ids = decision.filing_ids
        filters = schema.filing_filter(ids) if ids else {}
        logger.debug(
            "FilingScope {query!r} -> {filing_ids} ({reason})", query=query, filing_ids=ids, reason=decision.reason
        )
        return {"filing_ids": list(ids), "filters": filters, "scope": decision.to_dict()}
