"""Haystack's logging style for code that does not import Haystack: ``logger.info("read {n_pages} pages",
n_pages=n)``. The message's ``{fields}`` are filled from the keyword values, which also go to the record's
``extra`` (structured logging), as ``haystack.logging`` does; the records go to the standard ``logging`` tree under
the module's name."""

import logging
from typing import Any


class KeywordLogger:
    """A standard logger called with keyword fields only (``haystack.logging.getLogger``'s contract)."""

    def __init__(self, name: str) -> None:
        self.logger = logging.getLogger(name)

    def _log(self, level: int, msg: str, exc_info: Any, fields: dict[str, Any]) -> None:
        if not self.logger.isEnabledFor(level):
            return
        try:
            text = msg.format(**fields)
        except (KeyError, ValueError, IndexError):
            text = msg
        # stacklevel 3: the caller of debug()/info()/..., not this module.
        self.logger.log(level, text, exc_info=exc_info, stacklevel=3, extra=fields)

    def debug(self, msg: str, *, exc_info: Any = None, **fields: Any) -> None:
        self._log(logging.DEBUG, msg, exc_info, fields)

    def info(self, msg: str, *, exc_info: Any = None, **fields: Any) -> None:
        self._log(logging.INFO, msg, exc_info, fields)

    def warning(self, msg: str, *, exc_info: Any = None, **fields: Any) -> None:
        self._log(logging.WARNING, msg, exc_info, fields)

    def error(self, msg: str, *, exc_info: Any = None, **fields: Any) -> None:
        self._log(logging.ERROR, msg, exc_info, fields)

    def exception(self, msg: str, *, exc_info: Any = True, **fields: Any) -> None:
        self._log(logging.ERROR, msg, exc_info, fields)


def get_logger(name: str) -> KeywordLogger:
    """The module logger: ``logger = get_logger(__name__)``."""
    return KeywordLogger(name)
