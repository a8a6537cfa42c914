import itertools
import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from haystack_fin.core.ingest.items import CATALOGS, COVER_CODE
from haystack_fin.core.lexicon import (
    Lexicon,
    TermCluster,
    cluster_terms_by_embedding,
    normalize_term,
    normalize_token,
    raw_tokens,
    similarity,
    split_finrad_term,
)

DATA_FILE = Path(__file__).resolve().parents[2] / "haystack_fin" / "data" / "lexicon.json"


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.load_default()


def _ids(matches) -> list[str]:
    return [m.cluster_id for m in matches]


class TestNormalizeTerm:
    def test_is_the_normalized_raw_tokens(self):
        # bm25.content_terms builds on the two parts; together they must stay normalize_term.
        text = "Shareholders’ Equity & ½ of FY2018 Capital Expenditures, R&D, 10-K_item"
        parts = [t for raw in raw_tokens(text) for t in normalize_token(raw)]
        assert " ".join(parts) == normalize_term(text)

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("Property, Plant & Equipment", "property plant and equipment"),
            ("Shareholders' Equity", "shareholder equity"),
            ("Management’s Discussion", "management discussion"),
            ("Total  Liabilities", "total liability"),
            ("Income Taxes", "income tax"),
            ("Businesses", "business"),
            ("Gross loss", "gross loss"),
            ("status basis bonus", "status basis bonus"),
            ("SG&A", "sg and a"),
            ("CET1", "cet1"),
            ("ＦＦＯ", "ffo"),  # full-width letters, NFKC
            ("non-GAAP", "non gaap"),
            ("EPS", "eps"),  # three letters: never folded
            ("", ""),
        ],
    )
    def test_cases(self, text, expected):
        assert normalize_term(text) == expected

    def test_plural_and_singular_agree(self):
        for singular, plural in [
            ("expense", "expenses"),
            ("liability", "liabilities"),
            ("lease", "leases"),
            ("tax", "taxes"),
        ]:
            assert normalize_term(singular) == normalize_term(plural)


class TestDefaultLexicon:
    def test_size(self, lexicon):
        assert len(lexicon) >= 100
        assert lexicon.n_terms >= 600
        assert len({t for c in lexicon for t in c.terms}) >= 600

    def test_loaded_once_and_shared(self, lexicon):
        assert Lexicon.load_default() is lexicon
        assert Lexicon.load(None) is lexicon and Lexicon.load("") is lexicon

    def test_load_from_path(self, tmp_path):
        path = tmp_path / "lex.json"
        path.write_text(json.dumps({"clusters": [{"id": "capex", "terms": ["capex"], "statements": ["cash_flow"]}]}))
        custom = Lexicon.load(path)
        assert custom.cluster("capex").statements == ("cash_flow",)
        assert custom.to_dict()["clusters"][0]["statements"] == ["cash_flow"]

    def test_statement_references_name_statement_clusters(self, lexicon):
        statement_ids = {c.id for c in lexicon if c.category == "financial_statements"}
        referenced = {s for c in lexicon for s in c.statements}
        assert referenced and referenced <= statement_ids

    def test_file_is_lower_case_and_well_formed(self):
        data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
        assert {"description", "item_codes", "term_policy", "clusters"} <= set(data)
        ids = [c["id"] for c in data["clusters"]]
        assert len(ids) == len(set(ids))
        for cluster in data["clusters"]:
            assert cluster["name"] and cluster["category"] and cluster["terms"], cluster["id"]
            for term in cluster["terms"]:
                assert term == term.lower() == " ".join(term.split()), (cluster["id"], term)

    def test_no_term_in_two_clusters(self):
        data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
        owner: dict[str, str] = {}
        for cluster in data["clusters"]:
            for term in cluster["terms"]:
                key = normalize_term(term)
                assert owner.setdefault(key, cluster["id"]) == cluster["id"], (term, owner[key], cluster["id"])
        Lexicon.from_json(DATA_FILE, on_conflict="error")  # the loader enforces the same policy

    def test_item_codes_are_catalog_codes(self, lexicon):
        for cluster in lexicon:
            for form, codes in cluster.items.items():
                # "cover" is the text before the first Item (cover page, Section 12(b) table), routable by prior.
                known = {spec.code for spec in CATALOGS[form]} | {COVER_CODE}
                assert set(codes) <= known, (cluster.id, form, set(codes) - known)

    def test_terms_fit_find_terms_default_window(self, lexicon):
        longest = max(len(key.split()) for key in lexicon.term_index)
        assert [
            m.cluster_id
            for m in lexicon.find_terms(
                "x " * 3 + "management's discussion and analysis of financial condition and results of operations"
            )
        ] == ["mdna"]
        assert longest <= 12

    @pytest.mark.parametrize(
        "synonyms",
        [
            ["revenue", "revenues", "net sales", "net revenues", "total net revenues", "turnover", "sales", "top line"],
            [
                "capex",
                "capital expenditures",
                "capital spending",
                "purchases of property, plant and equipment",
                "payments for property and equipment",
                "additions to property and equipment",
            ],
            ["cet1", "common equity tier 1", "CET1 ratio"],
            ["ffo", "funds from operations"],
            ["affo", "adjusted funds from operations"],
            ["eps", "earnings per share", "diluted EPS"],
            ["d&a", "depreciation and amortization", "D & A"],
            ["cogs", "cost of goods sold", "cost of sales"],
            ["pp&e", "property, plant and equipment", "fixed assets"],
            ["nim", "net interest margin"],
            ["provision for credit losses", "provision for loan losses"],
            ["tier 1 leverage ratio", "Tier 1 leverage"],
            ["combined ratio", "underlying combined ratio"],
            ["loss reserves", "IBNR", "unpaid losses and loss adjustment expenses"],
            ["net premiums written", "premiums written", "gross premiums written"],
            ["noi", "net operating income", "same-store NOI"],
            ["arpu", "average revenue per user"],
            ["same-store sales", "comparable sales", "comparable store sales", "comps"],
            ["revpar", "revenue per available room"],
            ["icfr", "internal control over financial reporting"],
            ["share repurchases", "stock buybacks", "buyback"],
            ["shareholders' equity", "stockholders equity", "total equity"],
            ["right-of-use assets", "ROU assets"],
            ["sg&a", "selling, general and administrative expenses"],
            ["guidance", "outlook", "full-year guidance"],
            ["acquisitions", "acquired", "acquire", "business combinations"],
            ["divestitures", "divested", "businesses sold"],
            ["capital return", "return to shareholders", "returned to shareholders"],
            ["operating expenses", "operations and maintenance expenses", "operating and maintenance expenses"],
        ],
    )
    def test_synonyms_share_a_cluster(self, lexicon, synonyms):
        clusters = {t: getattr(lexicon.cluster_of(t), "id", None) for t in synonyms}
        assert len(set(clusters.values())) == 1 and None not in clusters.values(), clusters

    def test_distinct_concepts_stay_apart(self, lexicon):
        pairs = [
            ("revenue", "fixed asset turnover"),
            ("sales", "cost of sales"),
            ("sales", "same-store sales"),
            ("cet1", "tier 1 capital"),
            ("ffo", "affo"),
            ("eps", "net income"),
            ("leverage ratio", "tier 1 leverage ratio"),
        ]
        for a, b in pairs:
            assert lexicon.cluster_of(a).id != lexicon.cluster_of(b).id, (a, b)

    def test_item_prior_and_expand(self, lexicon):
        assert lexicon.item_prior("capex", "10-K")[:2] == ("7", "8")
        assert lexicon.item_prior("risk_factors", "10-Q") == ("II-1A",)
        assert lexicon.item_prior("cet1", "8-K") == ()
        terms = lexicon.expand(["ffo", "affo", "ffo"])
        assert "funds from operations" in terms and "adjusted funds from operations" in terms
        assert len(terms) == len(set(terms))
        assert terms.index("ffo") < terms.index("affo")
        with pytest.raises(KeyError, match="no_such_cluster"):
            lexicon.expand(["no_such_cluster"])


class TestFindTerms:
    @pytest.mark.parametrize(
        ("question", "cluster"),
        [
            ("Which companies did eBay acquire in 2016 and 2017, and what did it pay?", "acquisitions"),
            ("What businesses has the company acquired since FY2020?", "acquisitions"),
            ("Which units did the company divest in FY2021?", "divestitures"),
            ("How much cash did the company return to shareholders in Q1 2023?", "capital_allocation"),
            ("How much stock did the company buy back in FY2022?", "share_repurchases"),
            ("How much did the company borrow in 2022?", "total_debt"),
            ("How much of its term loan did the company repay?", "debt_repayment"),
            ("Was the company sued over the recall?", "legal_proceedings"),
            ("How many people does the company employ?", "human_capital"),
            ("Did the company restructure its European operations?", "restructuring"),
        ],
    )
    def test_verbs_name_the_event(self, lexicon, question, cluster):
        # Analysts ask with the verb ("did X acquire"); filings title the note with the noun ("Acquisitions").
        assert cluster in [m.cluster_id for m in lexicon.find_terms(question)]

    def test_acquired_assets_stay_assets(self, lexicon):
        # The longer term wins: "acquired intangible assets" is an intangible, "net of cash acquired" a cash flow line.
        assert [m.cluster_id for m in lexicon.find_terms("acquired intangible assets")] == ["intangible_assets"]

    def test_capex_question(self, lexicon):
        matches = lexicon.find_terms("What was FY2018 capex for 3M?")
        assert [(m.term, m.cluster_id, m.match_type) for m in matches] == [("capex", "capex", "exact")]
        assert (matches[0].start, matches[0].end) == (3, 4)

    def test_longest_term_wins(self, lexicon):
        matches = lexicon.find_terms("What is the FY2019 fixed asset turnover ratio?")
        assert _ids(matches) == ["fixed_asset_turnover"]
        assert matches[0].text == "fixed asset turnover ratio"
        assert _ids(lexicon.find_terms("Cost of sales rose faster than net sales.")) == ["cost_of_revenue", "revenue"]

    def test_non_overlapping(self, lexicon):
        matches = lexicon.find_terms("Income tax expense and net income tax expense")
        spans = [(m.start, m.end) for m in matches]
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in itertools.pairwise(spans))
        assert _ids(matches)[0] == "income_tax_expense"

    def test_exact_normalized_and_offsets(self, lexicon):
        text = "Purchases of Property, Plant & Equipment were $5.2bn; property, plant and equipment grew."
        matches = lexicon.find_terms(text)
        assert [(m.cluster_id, m.match_type) for m in matches] == [("capex", "normalized"), ("ppe", "exact")]
        for match in matches:
            assert text[match.start_char : match.end_char] == match.text
        assert matches[0].term == "purchases of property, plant and equipment"

    def test_fuzzy_typo(self, lexicon):
        matches = lexicon.find_terms("What were the capital expenditres in FY2021?")
        assert [(m.cluster_id, m.match_type) for m in matches] == [("capex", "fuzzy")]
        assert 0.9 <= matches[0].score < 1.0
        assert matches[0].text == "capital expenditres"
        assert _ids(lexicon.find_terms("Total liabilites in 2022?")) == ["total_liabilities"]
        assert lexicon.find_terms("What were the capital expenditres in FY2021?", fuzzy=False) == []

    def test_fuzzy_leaves_real_words_alone(self, lexicon):
        # "divided" is one letter from "dividend", "throughout" one from "throughput": real words, not typos.
        assert _ids(lexicon.find_terms("Net income divided by revenue throughout the year")) == [
            "net_income",
            "revenue",
        ]

    def test_fuzzy_needs_long_terms(self, lexicon):
        assert lexicon.find_terms("What is the capx?") == []  # "capex" has 5 characters, below min_fuzzy_chars

    def test_max_ngram(self, lexicon):
        assert _ids(lexicon.find_terms("fixed asset turnover ratio", max_ngram=1)) == ["revenue"]
        with pytest.raises(ValueError, match="max_ngram"):
            lexicon.find_terms("revenue", max_ngram=0)

    def test_empty_text(self, lexicon):
        assert lexicon.find_terms("") == []
        assert lexicon.count_cluster_terms("") == {}

    def test_question_is_fast(self, lexicon):
        question = (
            "How did the FY2021 fixed asset turnover ratio of the retailer move, and how did its capital "
            "expenditres compare with depreciation and amortization over the three years?"
        )
        lexicon.find_terms(question)
        best = min(_timed(lambda: lexicon.find_terms(question)) for _ in range(10))
        assert best < 0.005

    def test_item_text_is_fast(self, lexicon):
        text = " ".join([FILING_PARAGRAPH] * 25)
        assert len(text.split()) >= 2000
        best = min(_timed(lambda: lexicon.find_terms(text, fuzzy=False)) for _ in range(3))
        assert best < 0.05


FILING_PARAGRAPH = (
    "Net revenue increased 8.7% to $86.4 billion, driven by effective net pricing, while cost of sales rose. "
    "Capital spending was $5.2 billion and purchases of property, plant and equipment are expected to grow. "
    "Selling, general and administrative expenses included restructuring charges of $411 million under the "
    "productivity plan. Income tax expense reflected an effective tax rate of 20.9%. We repurchased shares and "
    "paid dividends of $6.2 billion. Our revolving credit facility remained undrawn and commercial paper "
    "borrowings were repaid; we remained in compliance with all covenants."
)


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


class TestCountClusterTerms:
    def test_counts(self, lexicon):
        counts = lexicon.count_cluster_terms(FILING_PARAGRAPH + " Net sales grew; capex fell; CAPEX again.")
        assert counts["capex"] == 4  # capital spending, purchases of PP&E, capex, CAPEX
        assert counts["revenue"] == 2  # net revenue, net sales; "cost of sales" is cost_of_revenue
        assert counts["cost_of_revenue"] == 1
        assert counts["sga"] == 1 and counts["restructuring"] == 2 and counts["dividends"] == 1
        assert counts["effective_tax_rate"] == 1 and counts["income_tax_expense"] == 1
        assert "fixed_asset_turnover" not in counts

    def test_docstring_example(self, lexicon):
        assert lexicon.count_cluster_terms("Net sales rose; capital expenditures fell.") == {"revenue": 1, "capex": 1}

    def test_same_matches_as_find_terms(self, lexicon):
        text = FILING_PARAGRAPH * 3 + " Common Equity Tier 1 and CET1; FFO, AFFO and same-store NOI; RevPAR."
        expected = Counter(_ids(lexicon.find_terms(text, fuzzy=False)))
        assert lexicon.count_cluster_terms(text) == dict(expected)

    def test_100k_words_well_under_a_second(self, lexicon):
        filler = "The Company and its subsidiaries operate in several markets and report results annually. "
        text = " ".join([FILING_PARAGRAPH, filler * 3] * 800)
        assert len(text.split()) >= 100_000
        best = min(_timed(lambda: lexicon.count_cluster_terms(text)) for _ in range(2))
        assert best < 1.0


class TestConstructionAndMerge:
    def test_conflict_raises_or_is_recorded(self):
        clusters = [TermCluster("a", "A", "x", ("net sales",)), TermCluster("b", "B", "x", ("Net Sale", "gmv"))]
        with pytest.raises(ValueError, match="net sale"):
            Lexicon(clusters)
        lexicon = Lexicon(clusters, on_conflict="skip")
        assert lexicon.conflicts == [("Net Sale", "a", "b")]
        assert lexicon.cluster("b").terms == ("gmv",)

    def test_duplicate_id_and_bad_policy(self):
        with pytest.raises(ValueError, match="Duplicate"):
            Lexicon([TermCluster("a", "A", "x", ("one",)), TermCluster("a", "A", "x", ("two",))])
        with pytest.raises(ValueError, match="on_conflict"):
            Lexicon([], on_conflict="keep")  # type: ignore[arg-type]  # the invalid value under test

    def test_json_round_trip(self, tmp_path, lexicon):
        path = tmp_path / "lexicon.json"
        lexicon.to_json(path)
        again = Lexicon.from_json(path)
        assert [c.id for c in again] == [c.id for c in lexicon]
        assert again.n_terms == lexicon.n_terms and again.not_typos == lexicon.not_typos
        assert again.cluster("capex") == lexicon.cluster("capex")

    def test_from_dict_validation(self):
        with pytest.raises(ValueError, match="clusters"):
            Lexicon.from_dict({})
        with pytest.raises(ValueError, match="terms"):
            Lexicon.from_dict({"clusters": [{"id": "a", "terms": "revenue"}]})

    def test_merge_extends_overlapping_cluster(self, lexicon):
        merged = lexicon.merge([TermCluster("mine", "Mine", "custom", ("Net Sales", "top-line receipts"))])
        assert merged.cluster_of("top-line receipts").id == "revenue"
        assert "mine" not in merged and len(merged) == len(lexicon)
        assert lexicon.cluster_of("top-line receipts") is None  # the original is untouched

    def test_from_term_groups(self):
        lexicon = Lexicon.from_term_groups([["Widget sales", "widget revenue"], ["gizmo margin"]])
        assert _ids(lexicon.find_terms("Widget revenue and gizmo margins")) == ["group:0", "group:1"]


FINRAD_CSV = """terms,definitions,source,assigned_readability
Earnings Before Interest and Taxes (EBIT),"A measure of profit, before interest and taxes.",investopedia,1
"Revenue, Sales, Turnover",Income from normal business activities.,glossary,0
"Property, plant and equipment",Long-lived tangible assets.,glossary,0
Zero-Coupon Bond / Discount Bond,A bond that pays no interest.,investopedia,1
P/E Ratio,Price divided by earnings per share.,investopedia,1
,empty term row,,
Top-line receipts; Revenue,Another name for revenue.,glossary,0
"""


class TestFinradCsv:
    @pytest.fixture
    def csv_path(self, tmp_path) -> Path:
        path = tmp_path / "finrad.csv"
        path.write_text("\ufeff" + FINRAD_CSV, encoding="utf-8")  # byte-order mark as some exports write it
        return path

    def test_rows_become_clusters(self, csv_path):
        lexicon = Lexicon.from_finrad_csv(csv_path)
        ebit = lexicon.cluster_of("EBIT")
        assert ebit.id == "finrad:earnings-before-interest-and-taxes"
        assert ebit.terms == ("earnings before interest and taxes", "ebit")
        assert ebit.definition.startswith("A measure of profit") and ebit.category == "finrad"
        assert lexicon.cluster_of("turnover").id == lexicon.cluster_of("sales").id
        assert lexicon.cluster_of("property, plant and equipment").terms == ("property, plant and equipment",)
        assert lexicon.cluster_of("discount bond").id == lexicon.cluster_of("zero-coupon bond").id
        assert lexicon.cluster_of("p/e ratio") is not None
        # "Top-line receipts; Revenue" shares "revenue" with the second row: it extends that cluster.
        assert lexicon.cluster_of("top-line receipts").id == lexicon.cluster_of("turnover").id
        assert len(lexicon) == 5

    def test_merge_with_default(self, csv_path, lexicon):
        merged = Lexicon.from_finrad_csv(csv_path, merge_default=True)
        assert merged.cluster_of("EBIT").id == "ebit"  # joins the built-in cluster
        assert merged.cluster_of("top-line receipts").id == "revenue"
        assert merged.cluster_of("discount bond").id.startswith("finrad:")
        assert merged.cluster_of("P/E ratio").id == "pe_ratio"
        assert len(merged) == len(lexicon) + 1  # only the bond row is a new concept
        assert merged.not_typos == lexicon.not_typos

    def test_without_header_or_splitting(self, tmp_path):
        path = tmp_path / "plain.csv"
        path.write_text("Revenue/Turnover,Income\nNet Sales,Income\n", encoding="utf-8")
        split = Lexicon.from_finrad_csv(path)  # no header: the first row is a term
        assert len(split) == 2 and split.cluster_of("turnover").id == split.cluster_of("revenue").id
        unsplit = Lexicon.from_finrad_csv(path, split_variants=False)
        assert unsplit.cluster_of("turnover") is None and unsplit.cluster_of("revenue/turnover") is not None

    @pytest.mark.parametrize(
        ("cell", "variants"),
        [
            ("Earnings Before Interest and Taxes (EBIT)", ["Earnings Before Interest and Taxes", "EBIT"]),
            ("Revenue, Sales, Turnover", ["Revenue", "Sales", "Turnover"]),
            ("Accounts receivable, net", ["Accounts receivable, net"]),
            ("Selling, general and administrative", ["Selling, general and administrative"]),
            ("P/E Ratio", ["P/E Ratio"]),
            ("revenue/turnover", ["revenue", "turnover"]),
            ("Bid; Offer", ["Bid", "Offer"]),
            ("Price-to-Earnings Ratio (P/E Ratio)", ["Price-to-Earnings Ratio", "P/E Ratio"]),
        ],
    )
    def test_split_finrad_term(self, cell, variants):
        assert split_finrad_term(cell) == variants


def _fake_embed(terms: list[str]) -> np.ndarray:
    # Each term points along the axis of the first topic word it contains, plus a small term-specific tilt.
    topics = ["revenue", "capital", "dividend", "risk"]
    vectors = []
    for number, term in enumerate(terms):
        vector = np.full(len(topics) + 1, 0.0)
        vector[next(i for i, topic in enumerate(topics) if topic in term.lower())] = 1.0
        vector[-1] = 0.05 * (number % 3)
        vectors.append(vector)
    return np.array(vectors)


class TestEmbeddingClustering:
    def test_groups_by_cosine_distance(self):
        terms = [
            "net revenue",
            "capital spending",
            "revenue growth",
            "dividend paid",
            "capital outlays",
            "Net Revenues",
            "risk factors",
        ]
        groups = cluster_terms_by_embedding(terms, _fake_embed, threshold=0.2)
        assert groups == [
            ["net revenue", "revenue growth"],
            ["capital spending", "capital outlays"],
            ["dividend paid"],
            ["risk factors"],
        ]  # "Net Revenues" is a duplicate after normalizing

    def test_threshold_is_a_distance(self):
        terms = ["net revenue", "capital spending", "dividend paid"]
        assert len(cluster_terms_by_embedding(terms, _fake_embed, threshold=1e-6)) == 3
        assert len(cluster_terms_by_embedding(terms, _fake_embed, threshold=1.5)) == 1

    def test_edge_cases(self):
        assert cluster_terms_by_embedding([], _fake_embed) == []
        assert cluster_terms_by_embedding(["revenue"], _fake_embed) == [["revenue"]]
        with pytest.raises(ValueError, match="shape"):
            cluster_terms_by_embedding(["revenue", "capital"], lambda terms: np.zeros((1, 3)))
        with pytest.raises(ValueError, match="cosine distance"):
            cluster_terms_by_embedding(["revenue", "capital"], _fake_embed, threshold=-1)

    def test_groups_feed_a_lexicon(self):
        groups = cluster_terms_by_embedding(["capital spending", "capital outlays", "risk factors"], _fake_embed, 0.2)
        lexicon = Lexicon.from_term_groups(groups)
        assert lexicon.cluster_of("capital outlays").id == lexicon.cluster_of("capital spending").id


def test_similarity():
    assert similarity("expenditure", "expenditure") == 1.0
    assert similarity("expenditres", "expenditures") == pytest.approx(22 / 23)
    assert similarity("", "abc") == 0.0
    assert similarity("expense", "expanse") < 0.9
