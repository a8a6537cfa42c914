"""Filing scope: question parsing, company aliases and the ranked, explained choice of filings.

The profiles are 22 real filings (FinanceBench open-source documents) with the company, form and period values that
``detect_filing_meta`` reads from their PDFs. The questions are our own paraphrases.
"""

import json
from datetime import date
from pathlib import Path

import pytest

from haystack_fin.core.retrieval.companies import CompanyIndex, company_aliases, company_key, names_whole_company
from haystack_fin.core.retrieval.filing_ranking import FilingProfile, bound_unscoped, resolve_scope
from haystack_fin.core.retrieval.question_scope import parse_question_scope

# filing_id, company, ticker, form, fiscal_year, fiscal_quarter, period_end, period, items (shared with the other
# scope tests: tests/fixtures/filing_profiles.json)
FILINGS = [
    (*row[:8], tuple(row[8]))
    for row in json.loads((Path(__file__).parents[1] / "fixtures" / "filing_profiles.json").read_text())["rows"]
]

PROFILES = [FilingProfile(*row) for row in FILINGS]
ALL_IDS = {row[0] for row in FILINGS}


def scope_of(question: str, **kwargs) -> list[str]:
    return resolve_scope(question, PROFILES, **kwargs).filing_ids


# --- profiles -------------------------------------------------------------------------------------------------------


class TestFilingProfile:
    def test_from_meta_reads_filing_node_meta(self):
        meta = {
            "node_type": "filing",
            "filing_id": "PEPSICO_2023_8K_dated-2023-05-05",
            "company": "PepsiCo, Inc.",
            "form": "8-K",
            "period": "2023-05-03",
            "period_end": "2023-05-03",
            "fiscal_year": "2023",  # numbers may come back as strings from some stores
            "fiscal_quarter": None,
            "ticker": "PEP",
            "items": [{"item": "cover", "title": "Cover"}, {"item": "5.07", "title": "Submission of Matters"}],
        }
        p = FilingProfile.from_meta(meta)
        assert p == PROFILES[18]
        assert p.period_end_date == date(2023, 5, 3)
        assert not p.is_annual

    def test_from_meta_tolerates_missing_fields(self):
        p = FilingProfile.from_meta({"filing_id": "X"})
        assert (p.company, p.form, p.fiscal_year, p.items) == ("", "other", None, ())

    def test_annual_forms(self):
        assert PROFILES[1].is_annual
        assert not PROFILES[4].is_annual
        assert FilingProfile("A", form="10-K/A", fiscal_year=2020).is_annual


# --- question parsing -----------------------------------------------------------------------------------------------


def periods(question: str) -> list[tuple[int | None, int | None, bool]]:
    return [(p.year, p.quarter, p.fiscal) for p in parse_question_scope(question).periods]


class TestParseQuestionScope:
    @pytest.mark.parametrize(
        ("question", "expected"),
        [
            ("What was capex in FY2019?", [(2019, None, True)]),
            ("Net debt at FY 2021 year end?", [(2021, None, True)]),
            ("Margin in FY19 vs FY'18", [(2019, None, True), (2018, None, True)]),
            ("What changed in fiscal 2023?", [(2023, None, True)]),
            ("What changed in fiscal year 2023?", [(2023, None, True)]),
            ("Debt between 2022 and the 2021 fiscal period", [(2022, None, False), (2021, None, True)]),
            ("Three-year average FY2015 - FY2017", [(2015, None, True), (2017, None, True)]),
            ("Cash at Q2 of FY2024", [(2024, 2, True)]),
            ("Guidance as of FY2023Q1", [(2023, 1, True)]),
            ("Sales in the second quarter of fiscal 2024", [(2024, 2, True)]),
            ("Revenue in the fourth quarter of 2022", [(2022, 4, False)]),
            ("Did revenue grow in Q4 2022?", [(2022, 4, False)]),
            ("Investments held in H1 FY2023", [(2023, 2, True)]),
            ("Store count in the first half of fiscal 2024", [(2024, 2, True)]),
            ("Buybacks in 2022", [(2022, None, False)]),
            ("Revenue of 2020 million in 2021", [(2021, None, False)]),  # an amount is not a year
        ],
    )
    def test_periods(self, question, expected):
        assert periods(question) == expected

    def test_dates_day_and_month(self):
        scope = parse_question_scope("Per the 8-K dated May 2023, what was decided on May 26, 2023 and 2023-05-03?")
        assert [(d.value, d.precision) for d in scope.dates] == [
            (date(2023, 5, 1), "month"),
            (date(2023, 5, 26), "day"),
            (date(2023, 5, 3), "day"),
        ]
        assert scope.periods == ()  # the dates' years are not read again as bare years
        assert scope.years == [2023]

    def test_may_the_verb_is_not_a_month(self):
        assert parse_question_scope("How much may the company borrow in 2023?").dates == ()

    @pytest.mark.parametrize(
        ("question", "forms"),
        [
            ("What does the 10-K say?", ["10-K"]),
            ("Per its annual report, ...", ["10-K"]),
            ("In the 10Q for the quarter", ["10-Q"]),
            ("According to the quarterly report", ["10-Q"]),
            ("Per the 8-K filed in May", ["8-K"]),
            ("Per its earnings release", ["earnings_release"]),
            ("In the press release", ["earnings_release"]),
            ("What are retained earnings and earnings per share?", []),
        ],
    )
    def test_form_hints(self, question, forms):
        scope = parse_question_scope(question)
        assert [f.form for f in scope.forms if not f.weak] == forms

    def test_non_gaap_wording_is_a_weak_release_hint(self):
        (hint,) = parse_question_scope("Why was full-year guidance raised?").forms
        assert (hint.form, hint.weak) == ("earnings_release", True)

    def test_target_is_the_latest_period(self):
        target = parse_question_scope("How did the store count change between Q2 of FY2024 and FY2023?").target()
        assert (target.year, target.quarter, target.fiscal) == (2024, 2, True)
        target = parse_question_scope("Average capex from FY2018 to FY2020").target()
        assert target.year == 2020

    def test_target_prefers_as_of_and_skips_forward_years(self):
        scope = parse_question_scope("As of FY 2021, what benefit payments are expected for 2024?")
        assert [(p.year, p.anchored, p.forward) for p in scope.periods] == [(2021, True, False), (2024, False, True)]
        assert scope.target().year == 2021
        scope = parse_question_scope("What leverage is targeted by 2025 according to the FY2022 report?")
        assert scope.target().year == 2022

    def test_quarter_without_year_binds_to_the_year(self):
        target = parse_question_scope("What happened in the third quarter, the weakest of 2022?").target()
        assert (target.year, target.quarter) == (2022, 3)

    def test_company_spans(self):
        spans = parse_question_scope("What was 3M's FY2018 capex and how did Bank of America compare?").company_spans
        assert [s.text for s in spans] == ["3M", "Bank of America"]
        assert parse_question_scope("What is the total revenue in FY2022?").company_spans == ()
        assert parse_question_scope("Per the 8-K and the 10-Q of Q2 FY2024, ...").company_spans == ()

    def test_to_dict_is_json(self):
        d = parse_question_scope("Per the 8-K of May 3, 2023 and the 10-Q for Q2 FY2024").to_dict()
        json.dumps(d)
        assert d["target"]["label"] == "FY2024 Q2"


# --- companies ------------------------------------------------------------------------------------------------------


class TestCompanyAliases:
    @pytest.mark.parametrize(
        ("name", "expected"),
        [
            ("BEST BUY CO., INC.", {"best buy"}),
            ("MGM RESORTS INTERNATIONAL", {"mgm resorts", "mgm"}),
            ("THE COCA-COLA COMPANY", {"coca cola"}),
            ("Activision Blizzard", {"activision blizzard", "activision"}),
            ("PepsiCo, Inc.", {"pepsico", "pepsi"}),
            ("Verizon Communications Inc.", {"verizon communications", "verizon"}),
            ("AMAZON.COM, INC.", {"amazon"}),
            ("JPMORGAN CHASE & CO", {"jpmorgan chase", "jpmorgan"}),
        ],
    )
    def test_aliases(self, name, expected):
        assert expected <= {alias for alias, _ in company_aliases(name)}

    def test_ordinary_first_word_is_no_alias(self):
        assert "best" not in {a for a, _ in company_aliases("BEST BUY CO., INC.")}
        assert "american" not in {a for a, _ in company_aliases("American Express Company")}

    def test_company_key_groups_spellings(self):
        assert company_key("MGM RESORTS INTERNATIONAL") == company_key("MGM Resorts International") == "mgm resorts"


def found(index: CompanyIndex, question: str) -> list[tuple[str, str]]:
    return [(m.text, m.key) for m in index.find(question)]


class TestCompanyIndex:
    index = CompanyIndex(PROFILES)

    def test_groups_filings_by_company(self):
        assert len(self.index) == 8
        assert len(self.index.companies["mgm resorts international"].filing_ids) == 5

    @pytest.mark.parametrize(
        ("question", "text", "key"),
        [
            ("Is Best Buy's quick ratio healthy?", "Best Buy", "best buy"),
            ("What did the Coca-Cola Company earn?", "Coca-Cola Company", "coca cola"),
            ("What did Coca Cola earn?", "Coca Cola", "coca cola"),
            ("What did cocacola earn?", "cocacola", "coca cola"),
            ("What did MGM's casinos earn?", "MGM", "mgm resorts international"),
            ("What did Activision earn?", "Activision", "activision blizzard"),
            ("How did Pepsi grow?", "Pepsi", "pepsico"),
            ("What is VZ's net debt?", "VZ", "verizon communications"),
            ("What is $BBY trading at?", "$BBY", "best buy"),
        ],
    )
    def test_exact_names_aliases_and_tickers(self, question, text, key):
        assert found(self.index, question) == [(text, key)]

    def test_ticker_is_case_sensitive(self):
        assert found(self.index, "Is a vz or pep ratio meaningful?") == []

    def test_ambiguous_tickers_need_a_cashtag(self):
        index = CompanyIndex([FilingProfile("GARTNER_2022_10K", "Gartner, Inc.", "IT", "10-K", 2022)])
        assert found(index, "How much did IT spending grow?") == []
        assert found(index, "How did $IT perform?") == [("$IT", "gartner")]
        assert found(index, "How did (NYSE: IT) perform?") == [("IT", "gartner")]

    def test_ordinary_word_names_must_be_capitalized(self):
        index = CompanyIndex([FilingProfile("TGT_2022_10K", "Target Corporation", "TGT", "10-K", 2022)])
        assert found(index, "What is the target leverage ratio?") == []
        assert found(index, "What is Target's leverage ratio?") == [("Target", "target")]

    @pytest.mark.parametrize(
        ("question", "key", "distance"),
        [
            ("How did Verizn's debt change?", "verizon communications", 1),
            ("What was Micrsoft's revenue?", "microsoft", 1),
            ("what did activison report?", "activision blizzard", 1),
            ("What did Bset Buy report?", "best buy", 1),
        ],
    )
    def test_fuzzy_names(self, question, key, distance):
        (mention,) = self.index.find(question)
        assert (mention.key, mention.how, mention.distance) == (key, "fuzzy", distance)

    def test_no_fuzzy_hit_on_ordinary_words(self):
        index = CompanyIndex([FilingProfile("BA_2022_10K", "The Boeing Company", "BA", "10-K", 2022)])
        assert index.find("Is the company being paid on time?") == []
        assert [m.key for m in index.find("How many planes did Beoing deliver?")] == ["boeing"]

    def test_user_aliases(self):
        index = CompanyIndex(PROFILES, aliases={"THE COCA-COLA COMPANY": ["Coke"], "PEP": ["Frito owner"]})
        assert found(index, "How did Coke do?") == [("Coke", "coca cola")]
        assert found(index, "How did the Frito owner do?") == [("Frito owner", "pepsico")]

    def test_a_ticker_wins_the_span_over_another_companys_partial_name(self):
        # "MGM" is MGM Resorts' ticker and the suffix-stripped name of MGM Holdings: the symbol names one company.
        index = CompanyIndex(
            [
                FilingProfile("MGM_2022_10K", "MGM Resorts International", "MGM", "10-K", 2022),
                FilingProfile("MGMH_2022_10K", "MGM Holdings", "MGMH", "10-K", 2022),
            ]
        )
        assert found(index, "What was MGM's interest coverage in FY2022?") == [("MGM", "mgm resorts international")]
        assert found(index, "What did MGM Holdings earn?") == [("MGM Holdings", "mgm holdings")]
        # without tickers, the whole (suffix-stripped) name beats the other company's short alias, as before
        index = CompanyIndex(
            [
                FilingProfile("MGM_2022_10K", "MGM Resorts International", "", "10-K", 2022),
                FilingProfile("MGMH_2022_10K", "MGM Holdings", "", "10-K", 2022),
            ]
        )
        assert {m.key for m in index.find("What was MGM's interest coverage?")} == {"mgm holdings"}

    def test_a_name_shared_by_two_companies_names_both(self):
        # "Verizon" is the everyday name of both (generic "Communications" and "Holdings" dropped): ambiguous.
        index = CompanyIndex(
            [
                FilingProfile("VZ_2022_10K", "Verizon Communications Inc.", "VZ", "10-K", 2022),
                FilingProfile("VZH_2022_10K", "Verizon Holdings Inc.", "VZH", "10-K", 2022),
            ]
        )
        keys = {m.key for m in index.find("Is Verizon a capital intensive business based on FY 2022 data?")}
        assert keys == {"verizon communications", "verizon holdings"}
        assert found(index, "What did Verizon Holdings earn?") == [("Verizon Holdings", "verizon holdings")]

    def test_a_first_word_is_weaker_than_another_companys_name(self):
        index = CompanyIndex(
            [
                FilingProfile("VZ_2022_10K", "Verizon Communications Inc.", "VZ", "10-K", 2022),
                FilingProfile("VZWP_2022_10K", "Verizon Wireless Partners", "VZWP", "10-K", 2022),
            ]
        )
        assert found(index, "Is Verizon capital intensive?") == [("Verizon", "verizon communications")]

    def test_names_sharing_a_ticker_are_one_company(self):
        index = CompanyIndex(
            [
                FilingProfile("FB_2020_10K", "Facebook, Inc.", "FB", "10-K", 2020),
                FilingProfile("FB_2021_10K", "Meta Platforms, Inc.", "FB", "10-K", 2021),
            ]
        )
        assert len(index) == 1
        assert {m.key for m in index.find("What did Facebook spend?")} == {m.key for m in index.find("Meta Platforms")}

    def test_a_first_word_that_is_the_ticker_is_the_everyday_name(self):
        index = CompanyIndex(
            [
                FilingProfile("META_2024_10K", "Meta Platforms, Inc.", "META", "10-K", 2024),
                FilingProfile("BBY_2023_10K", "Best Buy Co., Inc.", "BBY", "10-K", 2023),
            ]
        )
        assert found(index, "Did Meta's debt increase in FY2024?") == [("Meta", "meta platforms")]
        assert found(index, "Is the meta data of each filing complete?") == []  # a name: written capitalized
        assert found(index, "Which was the best quarter?") == []  # Best Buy trades as BBY, not BEST


# --- resolve_scope --------------------------------------------------------------------------------------------------


class TestResolveScope:
    def test_an_ambiguous_name_keeps_the_companies_that_reported_the_period(self):
        profiles = [
            FilingProfile("VZ_2022_10K", "Verizon Communications Inc.", "VZ", "10-K", 2022),
            FilingProfile("VZ_2021_10K", "Verizon Communications Inc.", "VZ", "10-K", 2021),
            FilingProfile("VZWP_2019_10K", "Verizon Holdings Inc.", "VZWP", "10-K", 2019),
            FilingProfile("VZWP_2018_10K", "Verizon Holdings Inc.", "VZWP", "10-K", 2018),
        ]
        decision = resolve_scope("Does Verizon have a healthy quick ratio for FY 2022?", profiles)
        assert decision.filing_ids == ["VZ_2022_10K"]
        dropped = {m.filing_id: m.reasons[-1] for m in decision.matches if not m.selected}
        assert "no Verizon Holdings Inc. filing is for FY2022" in dropped["VZWP_2019_10K"]
        # Without a period nothing tells the two apart: both stay.
        undated = resolve_scope("Is Verizon capital intensive?", profiles, max_filings=4)
        assert {"VZ_2022_10K", "VZWP_2019_10K"} <= set(undated.filing_ids)
        # A year neither reported: both stay, closest filings first.
        neither = resolve_scope("What was Verizon's capex in FY 2015?", profiles, max_filings=4)
        assert {"VZ_2021_10K", "VZWP_2019_10K"} <= set(neither.filing_ids)
        # Named on its own too, a company stays although it has no filing for the year.
        both = resolve_scope("Compare Verizon and Verizon Holdings in FY 2022", profiles)
        assert {"VZ_2022_10K", "VZWP_2019_10K"} <= set(both.filing_ids)

    def test_the_company_named_in_full_outranks_look_alikes_of_the_same_key(self):
        # "Best Buy Holdings Inc." groups with "Best Buy Co., Inc." (company_key drops "holdings"); with three
        # look-alike FY2017 10-Ks, max_filings=3 must not cut the company the question names in full.
        profiles = [FilingProfile("BBY_2017_10K", "Best Buy Co., Inc.", "BBY", "10-K", 2017)] + [
            FilingProfile(f"BBYH_2017_10K_C{i}", "Best Buy Holdings Inc.", "BBYH", "10-K", 2017) for i in range(3)
        ]
        decision = resolve_scope("What was Best Buy's net profit margin in FY2017?", profiles, max_filings=3)
        assert decision.filing_ids[0] == "BBY_2017_10K" and len(decision.filing_ids) == 3
        first = next(m for m in decision.matches if m.filing_id == "BBY_2017_10K")
        assert "the question names all of Best Buy Co., Inc." in first.reasons
        # One registrant per key: nothing to tell apart, the order is as before (no such reason).
        alone = resolve_scope("What was Best Buy's net profit margin in FY2017?", profiles[1:], max_filings=3)
        assert not any("names all of" in r for m in alone.matches for r in m.reasons)
        assert names_whole_company("Best Buy", "BEST BUY CO., INC.") and names_whole_company(
            "Coca-Cola", "The Coca-Cola Co"
        )
        assert not names_whole_company("Best Buy", "Best Buy Holdings Inc.") and not names_whole_company("", "Best Buy")

    def test_year_disambiguation_among_same_company_filings(self):
        assert scope_of("How large were Best Buy's inventories at the end of FY2019?") == ["BESTBUY_2019_10K"]
        assert scope_of("Best Buy's three-year average net margin for FY2015 to FY2017") == ["BESTBUY_2017_10K"]
        assert scope_of("What was Netflix's operating cash flow in 2015?") == ["NETFLIX_2015_10K"]
        assert scope_of("Did Microsoft add debt between FY2022 and FY2023?") == ["MICROSOFT_2023_10K"]

    def test_quarter_vs_annual(self):
        assert scope_of("Is Best Buy's quick ratio healthy as of Q2 FY2024?") == ["BESTBUY_2024Q2_10Q"]
        assert scope_of("Which short-term investments did MGM hold in H1 FY2023?") == ["MGMRESORTS_2023Q2_10Q"]
        # A full-year question: the 10-K first, the fourth-quarter release (it reports the full year) next.
        assert scope_of("Which MGM region contributed most in FY2022?") == [
            "MGMRESORTS_2022_10K",
            "MGMRESORTS_2022Q4_EARNINGS",
        ]

    def test_retail_fiscal_year_matches_fiscal_year_field(self):
        # Best Buy's FY2024 ends in early 2024; its second quarter ended July 2023.
        assert scope_of("How many stores did Best Buy run in the second quarter of fiscal 2024?") == [
            "BESTBUY_2024Q2_10Q"
        ]
        # A calendar year is matched against fiscal_year and the period_end year alike.
        ids = scope_of("How did Best Buy's cash change in 2023?")
        assert ids[0] == "BESTBUY_2023_10K" and "BESTBUY_2024Q2_10Q" in ids

    def test_earnings_release_form_hint(self):
        decision = resolve_scope("Did MGM Resorts' revenue grow in Q4 2022 per its earnings release?", PROFILES)
        assert decision.filing_ids == ["MGMRESORTS_2022Q4_EARNINGS"]
        assert "form 'earnings release' matched earnings_release" in decision.matches[0].reasons
        assert scope_of("Why did PepsiCo raise its full-year outlook as of FY2023Q1?") == ["PEPSICO_2023Q1_EARNINGS"]

    def test_8k_by_date(self):
        assert scope_of("What did PepsiCo's credit agreement allow as of May 26, 2023?") == [
            "PEPSICO_2023_8K_dated-2023-05-30"
        ]
        assert scope_of("How did PepsiCo shareholders vote at the meeting held on May 3, 2023?") == [
            "PEPSICO_2023_8K_dated-2023-05-05"
        ]
        # Month precision keeps both May 8-Ks; the 8-K reporting a vote (Item 5.07) ranks first.
        decision = resolve_scope("According to the 8-K dated May 2023, what was voted on at PepsiCo?", PROFILES)
        assert decision.filing_ids == ["PEPSICO_2023_8K_dated-2023-05-05", "PEPSICO_2023_8K_dated-2023-05-30"]
        assert any("Item 5.07" in r for r in decision.matches[0].reasons)

    def test_pre_2004_8k_items_match_event_topics(self):
        """A 2003 8-K files its earnings release under Item 12, which became Item 2.02 in August 2004."""
        old = FilingProfile("ACME_2003_8K", company="Acme Corp", form="8-K", fiscal_year=2003, items=("cover", "12"))
        new = FilingProfile("ACME_2003_8K_b", company="Acme Corp", form="8-K", fiscal_year=2003, items=("cover", "5"))
        decision = resolve_scope("What were Acme's quarterly results in 2003 according to its 8-K?", [new, old])
        assert decision.filing_ids[0] == "ACME_2003_8K"
        assert any("8-K Item 12" in r for r in decision.matches[0].reasons)

    def test_as_of_date_matches_period_end(self):
        decision = resolve_scope("As of December 31, 2021, what was Verizon's net debt?", PROFILES)
        assert decision.filing_ids == ["VERIZON_2021_10K"]
        assert "date 'December 31, 2021' matched period_end 2021-12-31" in decision.matches[0].reasons

    def test_forward_looking_year_does_not_move_the_scope(self):
        assert scope_of("As of FY 2021, what did Verizon expect to pay retirees in 2024?") == ["VERIZON_2021_10K"]

    def test_ticker_mention(self):
        decision = resolve_scope("What was VZ's capital intensity in FY 2022?", PROFILES)
        assert decision.filing_ids == ["VERIZON_2022_10K"]
        assert decision.matches[0].reasons[0] == ("company 'VZ' matched ticker 'VZ' of Verizon Communications Inc.")

    def test_typo(self):
        decision = resolve_scope("What was Micrsoft's cost of revenue in FY2016?", PROFILES)
        assert decision.filing_ids == ["MICROSOFT_2016_10K"]
        assert "fuzzy" in decision.matches[0].reasons[0]

    def test_no_company_mentioned_is_unscoped(self):
        decision = resolve_scope("Was there a drop in cash between FY 2023 and Q2 of FY2024?", PROFILES)
        assert not decision.scoped
        assert set(decision.filing_ids) == ALL_IDS
        assert decision.filing_ids[0] == "BESTBUY_2024Q2_10Q"  # still ranked by period
        assert decision.reason.startswith("no company mentioned and 8 companies indexed")

    def test_unknown_company_is_unscoped_and_named(self):
        decision = resolve_scope("What was 3M's FY2018 capital expenditure?", PROFILES)
        assert not decision.scoped
        assert set(decision.filing_ids) == ALL_IDS
        assert "'3M'" in decision.reason

    def test_single_company_index_needs_no_mention(self):
        bby = [p for p in PROFILES if p.company.startswith("BEST BUY")]
        decision = resolve_scope("What were inventories at the end of FY2019?", bby)
        assert decision.scoped and decision.filing_ids == ["BESTBUY_2019_10K"]
        assert "only company indexed" in decision.matches[0].reasons[0]

    def test_filing_filter_overrides_everything(self):
        decision = resolve_scope(
            "What was Best Buy's FY2019 revenue?", PROFILES, filing_filter=["NETFLIX_2017_10K", "UNKNOWN"]
        )
        assert decision.filing_ids == ["NETFLIX_2017_10K", "UNKNOWN"]
        assert decision.scoped and decision.reason.startswith("explicit filing filter")
        assert decision.matches[1].reasons[-1] == "no filing profile indexed"
        # An empty filter is no filter.
        assert resolve_scope("What was Best Buy's FY2019 revenue?", PROFILES, filing_filter=[]).filing_ids == [
            "BESTBUY_2019_10K"
        ]

    def test_no_period_prefers_latest_annual_reports(self):
        decision = resolve_scope("Are Best Buy's gross margins stable over time?", PROFILES, max_filings=2)
        assert decision.filing_ids == ["BESTBUY_2023_10K", "BESTBUY_2019_10K"]
        assert "no period mentioned" in decision.reason

    def test_several_companies_are_interleaved(self):
        ids = scope_of("Compare Coca-Cola and Netflix in 2017")
        assert ids == ["COCACOLA_2017_10K", "NETFLIX_2017_10K"]

    def test_missing_period_is_reported(self):
        decision = resolve_scope("What was Netflix's FY2020 revenue?", PROFILES)
        assert decision.scoped and decision.filing_ids[0] == "NETFLIX_2017_10K"
        assert "no Netflix, Inc. filing matches FY2020" in decision.reason

    def test_explanation_is_json_serializable(self):
        decision = resolve_scope("Is Best Buy's quick ratio healthy as of Q2 FY2024?", PROFILES)
        d = json.loads(json.dumps(decision.to_dict()))
        assert d["filing_ids"] == ["BESTBUY_2024Q2_10Q"]
        assert d["matches"][0]["reasons"] == [
            "company 'Best Buy' matched name 'best buy' of BEST BUY CO., INC.",
            "FY2024 Q2 matched fiscal_year=2024",
            "Q2 matched fiscal_quarter=2",
        ]
        assert d["companies"][0]["how"] == "name"
        assert not any(m["selected"] for m in d["matches"][1:])

    def test_no_profiles(self):
        decision = resolve_scope("What was Best Buy's FY2019 revenue?", [])
        assert decision.filing_ids == [] and not decision.scoped

    def test_invalid_max_filings(self):
        with pytest.raises(ValueError, match="max_filings"):
            resolve_scope("anything", PROFILES, max_filings=0)


def test_a_bounded_unscoped_scope_puts_the_filings_of_the_asked_period_first():
    """The nearest chunks choose which filings stay; among them the question's period goes first."""
    question = "Was there any drop in cash between FY 2023 and Q2 of FY2024?"
    decision = resolve_scope(question, PROFILES)
    assert not decision.scoped and decision.of_period == ["BESTBUY_2024Q2_10Q"]
    nearest = ["VERIZON_2022_10K", "PEPSICO_2021_10K", "BESTBUY_2024Q2_10Q", "MICROSOFT_2023_10K"]
    bounded = bound_unscoped(decision, nearest, 3)
    assert bounded.filing_ids == ["BESTBUY_2024Q2_10Q", "VERIZON_2022_10K", "PEPSICO_2021_10K"]
    # a filing of the period that the nearest chunks did not choose is not brought in
    assert bound_unscoped(decision, nearest[:2] + nearest[3:], 3).filing_ids == nearest[:2] + nearest[3:]
    # a question without a period keeps the nearest chunks' order
    plain = resolve_scope("Which company has the largest cash balance?", PROFILES)
    assert plain.of_period == [] and bound_unscoped(plain, nearest, 3).filing_ids == nearest[:3]
