"""Filing scope: which filings of a shared index a question is about (company, fiscal period, form).

In an index of many filings, plain retrieval readily answers from the wrong company or, far more often, from
another year of the right company: every 10-K of a company talks about revenue and capital expenditure. So a
question is first scoped to the filings it names. Three plain modules (no Haystack) do it:

* ``question_scope.parse_question_scope`` reads what a question says about period and form: fiscal years
  ("FY2019", "fiscal 2023", "FY 2021", "FY24"), quarters ("Q2 of FY2024", "FY2023Q1", "fourth quarter 2022",
  "H1 FY2023"), calendar years ("in 2022"), dates ("May 3, 2023", "May 2023"), form hints ("10-K", "annual
  report", "8-K", "earnings release") and candidate company names (capitalized spans, used only to explain a miss).
* ``companies.CompanyIndex`` groups the indexed filings into registrants by identity (CIK, ticker, SEC file
  number, the same name, a stated former name, a rename in the alias file), derives every registrant's aliases by
  general rules (``company_names``) and finds them in a question: exact alias, then ticker, then fuzzy name; with a
  company reference table (``company_reference``) it also finds known companies the index lacks.
* ``resolve_scope`` (this module) scores the filings of the mentioned companies against the question's period and
  form and returns a ranked, explained ``ScopeDecision``.

Scoping rules (the weights are the module constants below; each score line becomes a human-readable reason):

1. An explicit filing filter (a list of filing ids) overrides everything.
2. Company first. Filings of companies the question names are the only candidates; several named companies all
   stay in scope. A name that stands for several registrants ("Verizon" of Verizon Communications and a Verizon
   Holdings) pools their filings: the period decides among them (rule 3), and only then does the company the
   question names in full come first; when the question names a year and some of them have a filing for it, the
   others go. A known company's whole name beats a weak partial hit inside it ("Sun Life Financial" is not an
   indexed "Sun ..." by its first word), and a year inside a company's name is no period. With no indexed company
   named: a single-company index is scoped to that company, otherwise the scope is every filing (unscoped) with
   the reason, never an empty scope (``bound_unscoped`` caps it by a vector search: the dense filing ranking).
   Known companies the index lacks and names nobody knows are listed in ``unmatched`` (``status`` "not_indexed"
   or "unknown"); ``FilingScope`` turns the first into an empty scope with a notice, the second into a notice.
3. Target period. Of the periods a question mentions, the one introduced by "as of" wins; otherwise the latest
   one that is not forward-looking ("expect to pay in 2024", "guidance for FY2023"): "FY2017-FY2019 average" and
   "change between FY2022 and FY2023" are both answered by the latest year's filing, which carries the earlier
   years as comparatives. A filing scores for the target's fiscal year (a "FY" year is compared with
   ``fiscal_year`` only; a calendar year also with the ``period_end`` year), less for the next year (it reports the
   target year as comparative) and a little for the other years mentioned; for the quarter (exact fiscal quarter;
   an annual report for Q4; a different quarter is penalized). A question without a quarter prefers annual
   reports, then fourth-quarter releases (they report the full year); an 8-K is an event report and is not
   preferred for a period unless the question gives a date or asks for an 8-K.
4. Dates ("on May 26, 2023") are compared with ``period_end``: exact day, within a week (an 8-K is filed up to four
   business days after its event), or the same month.
5. Form hints add to matching forms ("annual report" -> 10-K/20-F/40-F, "quarterly report" -> 10-Q, "8-K",
   "earnings/press release" -> earnings_release, and an 8-K furnishing one: Item 2.02); forward-looking or
   non-GAAP wording ("guidance", "adjusted EBITDA") is a weak hint for an earnings release. An 8-K whose Items
   fit the question's topic ("vote", "annual meeting" -> Item 5.07) gains a little, which separates 8-Ks of the
   same month.
6. No period mentioned: every filing of the company is a candidate and annual reports come first, most recent
   first. The rationale: an undated question is usually about the current state or the history, which the
   latest 10-K covers best, and the older ones that follow keep the history in scope.
7. Selection: per company, filings scoring within ``SCOPE_MARGIN`` of that company's best filing, best first,
   companies interleaved, at most ``max_filings``. Ties go to the more complete form, then to the year closest to
   the target, then to the most recent filing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from haystack_fin.core.ingest.items import ITEMS_8K_SUCCESSOR
from haystack_fin.core.log import get_logger
from haystack_fin.core.retrieval.companies import CompanyIndex, CompanyMention, KnownMention, names_whole_company
from haystack_fin.core.retrieval.filing_profile import ANNUAL_FORMS, FilingProfile, form_family
from haystack_fin.core.retrieval.question_scope import (
    DateMention,
    FormHint,
    PeriodMention,
    QuestionScope,
    parse_question_scope,
)
from haystack_fin.core.validation import check_int

__all__ = [
    "ANNUAL_FORMS",
    "FilingMatch",
    "FilingProfile",
    "ScopeDecision",
    "bound_unscoped",
    "form_family",
    "question_event_topics",
    "resolve_scope",
    "score_filing",
]

logger = get_logger(__name__)

# --- weights (see the module docstring) -----------------------------------------------------------------------------

YEAR_MATCH = 3.0
NEXT_YEAR = 1.0  # the following year's filing reports the target year as its comparative
OTHER_YEAR = 0.5  # a filing of another year the question mentions ("FY2021 and FY2022")
QUARTER_MATCH = 2.0
QUARTER_MISMATCH = -1.0
ANNUAL_FOR_Q4 = 1.0
ANNUAL_FOR_YEAR = 1.5
Q4_FOR_YEAR = 0.75  # "fourth quarter and full year results"
EVENT_FOR_PERIOD = -1.0  # an 8-K asked about a period, with no date and no 8-K hint
DATE_EXACT = 4.0
DATE_NEAR = 3.0
DATE_SAME_MONTH = 2.0  # the question names only the month ("8-K dated May 2023")
DATE_SAME_MONTH_OTHER_DAY = 1.0
FORM_MATCH = 2.0
FORM_RELATED = 1.0  # earnings release <-> 8-K: releases are filed as 8-K exhibit 99.1
FORM_WEAK = 1.0
EVENT_TOPIC = 1.0
# A filing stays in scope when it scores within this margin of its company's best filing. 1.5 keeps a Q4 release
# next to the 10-K of the same year but drops the neighbouring years (at most NEXT_YEAR + ANNUAL_FOR_YEAR = 2.5
# against YEAR_MATCH + ANNUAL_FOR_YEAR = 4.5).
SCOPE_MARGIN = 1.5
NEAR_DAYS = 7

# Tie-break between equally scored filings: the more complete document first.
_FORM_RANK = {"10-K": 5, "20-F": 5, "40-F": 5, "10-Q": 4, "earnings_release": 3, "8-K": 2, "other": 1}

# 8-K Items by what a question about them says (SEC Form 8-K item titles, in question words).
_EVENT_TOPICS: dict[str, tuple[str, ...]] = {
    "1.01": ("agreement", "contract", "credit agreement", "revolving", "merger agreement", "entered into"),
    "1.02": ("terminate", "terminated", "termination"),
    "2.01": ("acquisition", "acquire", "acquired", "disposition", "divest", "divestiture", "completed the sale"),
    "2.02": ("results", "earnings", "quarterly results"),
    "2.03": ("borrow", "borrowing", "credit facility", "revolving", "notes", "loan", "debt", "indebtedness"),
    "2.05": ("restructuring", "layoff", "layoffs", "exit", "disposal"),
    "2.06": ("impairment", "impaired"),
    "5.02": ("ceo", "cfo", "officer", "director", "resign", "resigned", "appoint", "appointed", "departure", "retire"),
    "5.03": ("bylaws", "articles of incorporation", "charter", "fiscal year change"),
    "5.07": (
        "vote",
        "voted",
        "votes",
        "voting",
        "annual meeting",
        "shareholder meeting",
        "agm",
        "proposal",
        "elected",
        "election of directors",
        "shareholders approved",
    ),
}

# --- data -----------------------------------------------------------------------------------------------------------


# --- scoring --------------------------------------------------------------------------------------------------------


@dataclass
class FilingMatch:
    """One filing's score for a question, with the reasons that make it up."""

    filing_id: str
    company: str
    form: str
    period: str
    score: float
    reasons: list[str] = field(default_factory=list)
    selected: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "filing_id": self.filing_id,
            "company": self.company,
            "form": self.form,
            "period": self.period,
            "score": round(self.score, 2),
            "selected": self.selected,
            "reasons": list(self.reasons),
        }


@dataclass
class ScopeDecision:
    """The filings a question is scoped to, best first, and why.

    ``scoped`` is False when the decision is "every filing" (no company recognized, or no profiles); ``matches``
    lists the selected filings first, then the candidates that were left out, each with its reasons. ``unmatched``
    names what the question (or the caller's filter) asks for that no indexed filing has: ``{"kind": "filing_id" |
    "company" | "period" | "form", "text": ..., "reason": ...}``; the scope itself is unchanged by it, so that a
    caller can say "not in these filings" next to the closest filings.
    """

    filing_ids: list[str]
    scoped: bool
    reason: str
    matches: list[FilingMatch] = field(default_factory=list)
    companies: list[CompanyMention] = field(default_factory=list)
    question: QuestionScope | None = None
    unmatched: list[dict[str, str]] = field(default_factory=list)
    known: list[KnownMention] = field(default_factory=list)
    # An unscoped decision's filings of the period the question asks about (scoring at least YEAR_MATCH), best
    # first: ``bound_unscoped`` puts those it keeps first.
    of_period: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable explanation."""
        return {
            "filing_ids": list(self.filing_ids),
            "scoped": self.scoped,
            "reason": self.reason,
            "unmatched": [dict(u) for u in self.unmatched],
            "companies": [
                {
                    "text": c.text,
                    "company": c.company,
                    "alias": c.alias,
                    "how": c.how,
                    "distance": c.distance,
                    "rule": c.describe(),
                }
                for c in self.companies
            ],
            "not_indexed": [
                {"text": k.text, "company": k.name, "ticker": k.ticker, "cik": k.cik, "how": k.how} for k in self.known
            ],
            "question": self.question.to_dict() if self.question else None,
            "matches": [m.to_dict() for m in self.matches],
        }


def question_event_topics(question: str) -> dict[str, str]:
    """The 8-K Items whose topic the question's words name (``{item code: the word found}``), e.g. "vote" -> 5.07."""
    lower = question.lower()
    topics: dict[str, str] = {}
    for code, words in _EVENT_TOPICS.items():
        for w in words:
            if re.search(rf"\b{re.escape(w)}\b", lower):
                topics[code] = w
                break
    return topics


def _year_part(p: FilingProfile, target: PeriodMention, other_years: set[int]) -> tuple[float, str]:
    fy, end, y = p.fiscal_year, p.period_end_date, target.year
    if y is None:
        return 0.0, ""
    if fy == y:
        return YEAR_MATCH, f"{target.label} matched fiscal_year={fy}"
    if not target.fiscal and end is not None and end.year == y:
        return YEAR_MATCH, f"{y} matched period_end {p.period_end}"
    if fy is not None and fy == y + 1:
        return NEXT_YEAR, f"FY{fy} filing reports {target.label} as its prior-year comparative"
    if fy is not None and fy in other_years:
        return OTHER_YEAR, f"FY{fy} is another year the question mentions"
    return 0.0, f"fiscal_year={fy if fy is not None else '?'} does not match {target.label}"


def _quarter_part(p: FilingProfile, quarter: int) -> tuple[float, str]:
    if p.fiscal_quarter == quarter:
        return QUARTER_MATCH, f"Q{quarter} matched fiscal_quarter={quarter}"
    if p.fiscal_quarter is not None:
        return QUARTER_MISMATCH, f"fiscal_quarter={p.fiscal_quarter} is not the asked Q{quarter}"
    if p.is_annual and quarter == 4:
        return ANNUAL_FOR_Q4, "annual report covers the fourth quarter"
    return 0.0, ""


def _date_part(p: FilingProfile, dates: Sequence[DateMention]) -> tuple[float, str]:
    end = p.period_end_date
    if end is None:
        return 0.0, ""
    best = (0.0, "")
    for d in dates:
        if d.precision == "day":
            gap = abs((end - d.value).days)
            if gap == 0:
                cand = (DATE_EXACT, f"date {d.text!r} matched period_end {p.period_end}")
            elif gap <= NEAR_DAYS:
                cand = (DATE_NEAR, f"period_end {p.period_end} is {gap} days from {d.text!r}")
            elif (end.year, end.month) == (d.value.year, d.value.month):
                cand = (DATE_SAME_MONTH_OTHER_DAY, f"period_end {p.period_end} is in the month of {d.text!r}")
            else:
                continue
        elif (end.year, end.month) == (d.value.year, d.value.month):
            cand = (DATE_SAME_MONTH, f"period_end {p.period_end} is in {d.text!r}")
        else:
            continue
        best = max(best, cand, key=lambda c: c[0])
    return best


def _form_part(p: FilingProfile, forms: Sequence[FormHint]) -> tuple[float, str]:
    family = p.form_family
    best = (0.0, "")
    for h in forms:
        release = h.form == "earnings_release" and p.reports_results
        if family == h.form or release or (h.form == "10-K" and family in ANNUAL_FORMS and "annual" in h.text.lower()):
            cand = (
                (FORM_WEAK, f"{h.text!r} suggests an {family}")
                if h.weak
                else (FORM_MATCH, f"form {h.text!r} matched {p.form}")
            )
        elif not h.weak and {family, h.form} == {"8-K", "earnings_release"}:
            cand = (FORM_RELATED, f"{p.form} is related to the asked {h.text!r} (releases are 8-K exhibits)")
        else:
            continue
        best = max(best, cand, key=lambda c: c[0])
    return best


def score_filing(
    profile: FilingProfile,
    scope: QuestionScope,
    target: PeriodMention | None = None,
    topics: Mapping[str, str] | None = None,
) -> tuple[float, list[str]]:
    """Period, date, form and event-topic score of one filing for a parsed question, with its reasons."""
    score = 0.0
    reasons: list[str] = []

    def add(part: tuple[float, str]) -> None:
        nonlocal score
        score += part[0]
        if part[1]:
            reasons.append(part[1])

    family = profile.form_family
    if target is not None and target.year is not None:
        others = {y for y in scope.years if y != target.year}
        add(_year_part(profile, target, others))
    if target is not None and target.quarter:
        add(_quarter_part(profile, target.quarter))
    else:
        asks_event = bool(scope.dates) or any(h.form == "8-K" and not h.weak for h in scope.forms)
        what = "a full-year question" if target is not None else "a question without a period"
        if profile.is_annual:
            add((ANNUAL_FOR_YEAR, f"annual report preferred for {what}"))
        elif profile.fiscal_quarter == 4:
            add((Q4_FOR_YEAR, "fourth-quarter release also reports the full year"))
        elif family == "8-K" and not asks_event and not profile.reports_results:
            add((EVENT_FOR_PERIOD, "8-K reports an event, not a fiscal period"))
    if scope.dates:
        add(_date_part(profile, scope.dates))
    if scope.forms:
        add(_form_part(profile, scope.forms))
    if family == "8-K" and topics:
        # A pre-2004 8-K's Items ("12") are matched by what they became ("2.02").
        current = {code: ITEMS_8K_SUCCESSOR.get(code, code) for code in profile.items}
        hits = [f"{code} ({topics[new]!r})" for code, new in current.items() if new in topics]
        if hits:
            add((EVENT_TOPIC, f"8-K Item {', '.join(hits)} fits the question"))
    return score, reasons


def _sort_key(p: FilingProfile, score: float, target: PeriodMention | None) -> tuple[Any, ...]:
    end = p.period_end_date
    distance = 0
    if target is not None and target.year is not None and p.fiscal_year is not None:
        # Closer years first; of two equally close, the later one (it carries the other as comparative).
        distance = 2 * abs(p.fiscal_year - target.year) + (1 if p.fiscal_year < target.year else 0)
    return (
        -round(score, 6),
        -_FORM_RANK.get(p.form_family, 0),
        distance,
        -(end.toordinal() if end else 0),
        p.filing_id,
    )


# --- decision -------------------------------------------------------------------------------------------------------


def resolve_scope(
    question: str,
    profiles: Sequence[FilingProfile],
    filing_filter: Sequence[str] | None = None,
    max_filings: int = 3,
    aliases: Mapping[str, Sequence[str]] | None = None,
    company_index: CompanyIndex | None = None,
    question_scope: QuestionScope | None = None,
    event_topics: Mapping[str, str] | None = None,
) -> ScopeDecision:
    """Decide which filings ``question`` is about (rules in the module docstring).

    :param question: the user's question.
    :param profiles: the indexed filings.
    :param filing_filter: filing ids chosen by the caller; when non-empty they are the scope, in their order.
    :param max_filings: at most this many filings when the question is scoped by company.
    :param aliases: extra company names, see ``CompanyIndex``; ignored when ``company_index`` is given.
    :param company_index: a prebuilt index over ``profiles`` (saves rebuilding it per question).
    :param question_scope: ``parse_question_scope(question)`` when the caller has it already (a QueryAnalyzer).
    :param event_topics: ``question_event_topics(question)`` when the caller has it already.
    :returns: the ranked filing ids and the explanation.
    """
    check_int("max_filings", max_filings)
    by_id = {p.filing_id: p for p in profiles}
    if filing_filter:
        ids = list(dict.fromkeys(filing_filter))
        unknown = [fid for fid in ids if fid not in by_id]
        if unknown:
            logger.warning("Filing filter names filings without a profile: {unknown}", unknown=unknown)
        matches = [
            FilingMatch(
                fid,
                by_id[fid].company if fid in by_id else "",
                by_id[fid].form if fid in by_id else "",
                by_id[fid].period if fid in by_id else "",
                0.0,
                ["selected by the caller's filing filter"] + ([] if fid in by_id else ["no filing profile indexed"]),
                True,
            )
            for fid in ids
        ]
        missing = [{"kind": "filing_id", "text": fid, "reason": f"no indexed filing has id {fid!r}"} for fid in unknown]
        return ScopeDecision(
            ids,
            True,
            f"explicit filing filter ({len(ids)} filings) overrides the question",
            matches,
            unmatched=missing,
        )

    scope = question_scope if question_scope is not None else parse_question_scope(question)
    if not profiles:
        return ScopeDecision([], False, "no filing profiles in the index: unscoped", question=scope)
    index = company_index if company_index is not None else CompanyIndex(profiles, aliases)
    topics = dict(event_topics) if event_topics is not None else question_event_topics(question)
    mentions = index.find(question)
    # A known company's whole name beats a weak hit (a first word, a fuzzy match) inside it: "Sun Life Financial"
    # names the insurer the index lacks, not an indexed "Sun Pacific" by its first word; an exact known name also
    # beats a fuzzy or one-word match of the same span ("Quantum" is Quantum Corp, not "Zapata Quantum").
    known = index.find_known(question, [(m.start, m.end) for m in mentions if m.strength >= 2])
    mentions = [
        m
        for m in mentions
        if m.strength >= 2
        or not any(
            k.start <= m.start and m.end <= k.end and (k.end - k.start > m.end - m.start or m.strength == 0)
            for k in known
        )
    ]  # fmt: skip
    known = [k for k in known if not any(k.start < m.end and m.start < k.end for m in mentions)]
    # A year inside a company's name ("BlackRock Municipal 2030 Target Term Trust") is not a period of the question.
    named = [(m.start, m.end) for m in mentions] + [(k.start, k.end) for k in known]
    inside = [p for p in scope.periods if any(s <= p.start and p.end <= e for s, e in named)]
    if inside:
        scope = dataclasses.replace(scope, periods=tuple(p for p in scope.periods if p not in inside))
    target = scope.target()
    unmatched: list[dict[str, str]] = []

    if mentions:
        keys = list(dict.fromkeys(m.key for m in mentions))
        why_company = {k: next(m for m in mentions if m.key == k).describe() for k in keys}
        unmatched.extend(_unmatched_names(scope, index, mentions, known))
    elif len(index) == 1:
        keys = list(index.companies)
        why_company = {keys[0]: f"no company named; {index.companies[keys[0]].name} is the only company indexed"}
        unmatched.extend(_unmatched_names(scope, index, mentions, known))
    else:
        return _unscoped(question, profiles, scope, target, topics, max_filings, index, known)

    rejected: list[FilingMatch] = []
    notes: list[str] = []
    for key, why in _ambiguous_without_period(mentions, index, by_id, scope, target).items():
        keys.remove(key)
        for fid in index.companies[key].filing_ids:
            p = by_id[fid]
            rejected.append(FilingMatch(p.filing_id, p.company, p.form, p.period, 0.0, [why_company[key], why]))
    # One list of candidate filings per thing the question names: a company named alone, or every company an
    # ambiguous name stands for (pooled, so that the period decides among them before the name's form does).
    pools: list[list[str]] = []
    by_span: dict[tuple[int, int], set[str]] = {}
    for m in mentions:
        by_span.setdefault((m.start, m.end), set()).add(m.key)
    named_alone = {next(iter(ks)) for ks in by_span.values() if len(ks) == 1}
    for key in keys:
        spans = {(m.start, m.end) for m in mentions if m.key == key}
        pool = (
            None
            if key in named_alone
            else next(
                (pl for pl in pools if pl[0] not in named_alone and any(_same_span(spans, mentions, k) for k in pl)),
                None,
            )
        )
        if pool is None:
            pools.append([key])
        else:
            pool.append(key)
    per_pool: list[list[FilingMatch]] = []
    for pool in pools:
        said = [m.text for m in mentions if m.key in pool]
        fids = [fid for key in pool for fid in index.companies[key].filing_ids]
        whole = {fid for fid in fids if any(names_whole_company(t, by_id[fid].company) for t in said)}
        # Several registrants for one name ("Best Buy" of "Best Buy Co., Inc." and "Best Buy Holdings Inc."):
        # among equally scored filings, those of the company the question names in full come first, so that
        # max_filings cannot cut them for look-alikes. The score (period, form) always comes first.
        partial = bool(whole) and len(whole) < len(fids)
        scored = []
        for fid in fids:
            p = by_id[fid]
            s, reasons = score_filing(p, scope, target, topics)
            if partial and fid in whole:
                reasons = [*reasons, f"the question names all of {p.company}"]
            scored.append((p, s, [why_company[index.key_of_filing[fid]], *reasons]))
        scored.sort(key=lambda t: (-round(t[1], 6), t[0].filing_id not in whole, _sort_key(t[0], t[1], target)))
        best = scored[0][1]
        within = [(p, s, r) for p, s, r in scored if s >= best - SCOPE_MARGIN]
        per_pool.append([FilingMatch(p.filing_id, p.company, p.form, p.period, s, r) for p, s, r in within])
        for p, s, r in scored:
            if s < best - SCOPE_MARGIN:
                rejected.append(
                    FilingMatch(
                        p.filing_id, p.company, p.form, p.period, s, [*r, f"below the best {best:.2f} - margin"]
                    )
                )
        names = " / ".join(index.companies[k].name for k in pool)
        if target is not None and target.year is not None and best < YEAR_MATCH:
            notes.append(f"no {names} filing matches {target.label}; closest filings returned")
            unmatched.append(
                {"kind": "period", "text": target.label, "reason": f"no indexed {names} filing is for {target.label}"}
            )
        for hint in scope.forms:
            if not hint.weak and not any(_form_part(p, [hint])[0] > 0 for p, _, _ in scored):
                unmatched.append(
                    {"kind": "form", "text": hint.text, "reason": f"no indexed {names} filing is a {hint.form}"}
                )

    selected: list[FilingMatch] = []
    depth = 0
    while len(selected) < max_filings and any(depth < len(k) for k in per_pool):
        for kept in per_pool:
            if depth < len(kept) and len(selected) < max_filings:
                selected.append(kept[depth])
        depth += 1
    chosen = {fm.filing_id for fm in selected}
    for fm in selected:
        fm.selected = True
    left_out = [fm for kept in per_pool for fm in kept if fm.filing_id not in chosen]
    for fm in left_out:
        fm.reasons.append(f"beyond max_filings={max_filings}")
    names = ", ".join(index.companies[k].name for k in keys)
    period = f" for {target.label}" if target is not None else " (no period mentioned: annual reports, latest first)"
    reason = f"scoped to {names}{period}"
    if notes:
        reason += "; " + "; ".join(notes)
    decision = ScopeDecision(
        [m.filing_id for m in selected],
        True,
        reason,
        selected + left_out + rejected,
        mentions,
        scope,
        unmatched,
        known,
    )
    logger.debug("Scope of {question!r}: {filing_ids}", question=question, filing_ids=decision.filing_ids)
    return decision


def _same_span(spans: set[tuple[int, int]], mentions: Sequence[CompanyMention], key: str) -> bool:
    return any((m.start, m.end) in spans for m in mentions if m.key == key)


def _ambiguous_without_period(
    mentions: Sequence[CompanyMention],
    index: CompanyIndex,
    by_id: Mapping[str, FilingProfile],
    scope: QuestionScope,
    target: PeriodMention | None,
) -> dict[str, str]:
    """Companies to drop, with the reason: of the companies one ambiguous name stands for ("Verizon": Verizon
    Communications and Verizon Wireless Partners), those without a filing for the question's target year, when
    another of them has one. The question names one company and a period; the company that reported that period
    is the one meant. A company also named unambiguously elsewhere in the question stays."""
    if target is None or target.year is None:
        return {}
    others = {y for y in scope.years if y != target.year}
    by_span: dict[tuple[int, int], list[str]] = {}
    for m in mentions:
        by_span.setdefault((m.start, m.end), []).append(m.key)
    named_alone = {keys[0] for keys in by_span.values() if len(keys) == 1}
    dropped: dict[str, str] = {}
    for (start, end), keys in by_span.items():
        if len(keys) < 2:
            continue
        has_year = {
            k
            for k in keys
            if any(_year_part(by_id[f], target, others)[0] >= YEAR_MATCH for f in index.companies[k].filing_ids)
        }
        if not has_year:
            continue
        with_year = ", ".join(index.companies[k].name for k in keys if k in has_year)
        text = next(m.text for m in mentions if (m.start, m.end) == (start, end))
        for k in keys:
            if k not in has_year and k not in named_alone:
                dropped[k] = (
                    f"'{text}' is ambiguous; no {index.companies[k].name} filing is for {target.label}, "
                    f"{with_year} has one"
                )
    return dropped


def bound_unscoped(decision: ScopeDecision, nearest: Sequence[str], limit: int) -> ScopeDecision:
    """An unscoped decision cut to at most ``limit`` filings: those of the question's nearest chunks first
    (``nearest``: filing ids ranked by a vector search over the whole index), then the period-and-form order.

    Without a company, "every filing" is right for a handful of filings but grows with the index: a question
    naming no company in a store of 5,000 filings would load and search all of them. The nearest chunks are the
    only evidence left of which filings are meant (flat RAG's scope), so they choose; among those kept, the best
    matches of the period the question asks about come first (its Q2 10-Q before another company's 10-K), since
    later stages give the first filings' candidates first. A scoped decision, or one already within the limit, is
    returned unchanged.
    """
    if decision.scoped or limit < 1 or len(decision.filing_ids) <= limit:
        return decision
    allowed = set(decision.filing_ids)
    kept = list(dict.fromkeys(f for f in nearest if f in allowed))[:limit]
    by_vectors = len(kept)
    kept += [f for f in decision.filing_ids if f not in kept][: limit - len(kept)]
    of_period = [f for f in decision.of_period if f in kept]
    kept = of_period + [f for f in kept if f not in of_period]
    how = f"{by_vectors} by the nearest chunks" + (
        f", {limit - by_vectors} by period and form" if by_vectors < limit else ""
    )
    reason = f"{decision.reason}; bounded to {limit} of {len(decision.filing_ids)} filings ({how})"
    return dataclasses.replace(decision, filing_ids=kept, reason=reason)


def _unscoped(
    question: str,
    profiles: Sequence[FilingProfile],
    scope: QuestionScope,
    target: PeriodMention | None,
    topics: Mapping[str, str],
    max_filings: int,
    index: CompanyIndex,
    known: Sequence[KnownMention] = (),
) -> ScopeDecision:
    """Every filing, ranked by period and form only; the explanation lists the best few."""
    scored = [(p, *score_filing(p, scope, target, topics)) for p in profiles]
    scored.sort(key=lambda t: _sort_key(t[0], t[1], target))
    unmatched = _unmatched_names(scope, index, [], known)
    if unmatched:
        names = ", ".join(repr(u["text"]) for u in unmatched if u["kind"] == "company")
        reason = f"no indexed company recognized (unmatched names: {names}): unscoped, all {len(profiles)} filings"
    else:
        reason = f"no company mentioned and {len(index)} companies indexed: unscoped, all {len(profiles)} filings"
    matches = [
        FilingMatch(p.filing_id, p.company, p.form, p.period, s, ["unscoped", *r], True)
        for p, s, r in scored[:max_filings]
    ]
    logger.debug("Scope of {question!r}: unscoped", question=question)
    names_period = target is not None or bool(scope.dates)
    of_period = [p.filing_id for p, s, _ in scored if names_period and s >= YEAR_MATCH]
    return ScopeDecision(
        [p.filing_id for p, _, _ in scored], False, reason, matches, [], scope, unmatched, list(known), of_period
    )


def _unmatched_names(
    scope: QuestionScope,
    index: CompanyIndex,
    mentions: Sequence[CompanyMention],
    known: Sequence[KnownMention],
) -> list[dict[str, str]]:
    """What the question names that is no indexed company: the known companies the index lacks ("Apple" asked of a
    Best Buy store: ``status`` "not_indexed", with its name and ticker), then the capitalized names that are
    neither indexed nor known (``status`` "unknown"; a loose heuristic: a capitalized segment name is one too)."""
    out: list[dict[str, str]] = []
    for k in known:
        ticker = f" ({k.ticker})" if k.ticker else ""
        out.append(
            {
                "kind": "company",
                "status": "not_indexed",
                "text": k.text,
                "company": k.name,
                "ticker": k.ticker,
                "reason": f"{k.name}{ticker}, a listed company, has no indexed filing",
            }
        )
    taken = [(m.start, m.end) for m in mentions] + [(k.start, k.end) for k in known]
    indexed = ", ".join(sorted(entry.name for entry in index.companies.values())[:12])
    more = f" and {len(index) - 12} more" if len(index) > 12 else ""
    for span in scope.company_spans:
        if any(span.start < e and s < span.end for s, e in taken):
            continue
        out.append(
            {
                "kind": "company",
                "status": "unknown",
                "text": span.text,
                "reason": f"no indexed company is named {span.text!r} (indexed: {indexed}{more})",
            }
        )
    return out
