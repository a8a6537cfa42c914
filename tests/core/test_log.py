import logging

import pytest

from haystack_fin.core.log import get_logger


def test_keyword_fields_fill_the_message_and_the_record(caplog: pytest.LogCaptureFixture) -> None:
    logger = get_logger("haystack_fin.test_log")
    with caplog.at_level(logging.INFO, logger="haystack_fin.test_log"):
        logger.info("read {n_pages} pages of {source}", n_pages=3, source="x.pdf")
        logger.debug("not recorded at INFO {x}", x=1)
    (record,) = caplog.records
    assert record.getMessage() == "read 3 pages of x.pdf"
    assert record.n_pages == 3 and record.source == "x.pdf"  # structured fields, as haystack.logging gives them
    assert record.funcName == "test_keyword_fields_fill_the_message_and_the_record"  # the caller, not the shim


def test_a_message_with_braces_but_no_fields_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    logger = get_logger("haystack_fin.test_log")
    with caplog.at_level(logging.WARNING, logger="haystack_fin.test_log"):
        logger.warning("a literal {brace} in text")
    assert caplog.records[0].getMessage() == "a literal {brace} in text"


def test_positional_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        get_logger("haystack_fin.test_log").info("old style %s", "x")  # type: ignore[misc]
