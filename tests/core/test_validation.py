import pytest

from haystack_fin.core.validation import check_int, check_ints


@pytest.mark.parametrize("value", [1, 5, 10**9])
def test_accepts_integers_at_or_above_the_minimum(value: int) -> None:
    check_int("k", value)


@pytest.mark.parametrize("value", [0, -1, True, False, 1.0, "3", None])
def test_refuses_everything_else_with_one_message(value: object) -> None:
    with pytest.raises(ValueError, match=r"^k must be an integer >= 1, got "):
        check_int("k", value)


def test_bounds_and_optional() -> None:
    check_int("n", 0, 0)
    check_int("n", None, optional=True)
    check_int("k", 50, maximum=50)
    with pytest.raises(ValueError, match=r"^k must be an integer from 1 to 50, got 51$"):
        check_int("k", 51, maximum=50)
    with pytest.raises(ValueError, match=r"or None, got 'x'$"):
        check_int("n", "x", optional=True)


def test_components_refuse_a_bool_count() -> None:
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from haystack_fin.components.dual_tree_retriever import DualTreeRetriever

    with pytest.raises(ValueError, match="beam_width must be an integer >= 1, got True"):
        DualTreeRetriever(document_store=InMemoryDocumentStore(), beam_width=True)


def test_is_int_is_check_ints_rule() -> None:
    from haystack_fin.core.validation import is_int

    assert is_int(1) and is_int(0, 0) and not is_int(True) and not is_int(2.0) and not is_int(51, maximum=50)


def test_check_ints_checks_each_named_parameter() -> None:
    check_ints(0, a=0, b=3)
    check_ints(optional=True, a=None, b=2)
    with pytest.raises(ValueError, match=r"^b must be an integer >= 1, got 0$"):
        check_ints(a=1, b=0)
