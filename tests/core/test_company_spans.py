"""Capitalized spans of a question that may name a company the index lacks (the "not in these filings" notice)."""

import pytest

from haystack_fin.core.retrieval.companies import may_name_company
from haystack_fin.core.retrieval.question_scope import parse_question_scope


def _spans(question: str, terms: tuple[str, ...] = ()) -> dict[str, bool]:
    spans = parse_question_scope(question).company_spans
    return {s.text: may_name_company(question, s.start, s.end, terms) for s in spans}


@pytest.mark.parametrize(
    ("question", "terms", "expected"),
    [
        ("What was Apple's revenue in fiscal 2019?", ("revenue",), {"Apple": True}),
        ("Did Microsoft acquire Activision?", (), {"Microsoft": True, "Activision": True}),
        ("What was Domestic segment revenue?", ("revenue",), {"Domestic": False}),  # a segment, not a company
        ("What was International revenue in Q2?", ("revenue",), {"International": False}),
        ("What was revenue in North America?", ("revenue",), {"North America": False}),
        ("What is the Company's effective tax rate?", ("effective tax rate",), {"Company": False}),
        ("How much did Best Buy spend on Capital Expenditures?", ("Capital Expenditures",),
         {"Best Buy": True, "Capital Expenditures": False}),  # a lexicon term the question matched
        ("What did the Gaming division earn?", (), {"Gaming": False}),  # a segment noun follows
        ("What did Management say about the outlook?", (), {"Management": False}),
    ],
)  # fmt: skip
def test_which_spans_may_name_a_company(question, terms, expected):
    assert _spans(question, terms) == expected
