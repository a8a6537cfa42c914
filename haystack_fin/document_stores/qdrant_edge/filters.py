"""Haystack filters -> Qdrant Edge ``Filter`` objects.

Plain functions, tested alone (tests/document_stores/test_qdrant_edge.py). The semantics follow Haystack's
reference implementation (``haystack.utils.filters.document_matches_filter``) wherever Qdrant can express them:

- ``field`` paths: ``meta.x`` addresses the nested ``meta`` object of the payload (the payload is
  ``Document.to_dict(flatten=False)``); ``content``/``id``/... address the Document's own fields; any other name
  without a dot is read as a meta field, as the reference does for converted legacy filters.
- ``==``/``!=`` with ``None``: missing or null (``!=``: present and not null). Deviation: Qdrant's emptiness test
  also counts an empty list as "None".
- ``>``/``>=``/``<``/``<=`` with ``None`` match nothing; with a list or a non-date string they raise FilterError;
  ISO 8601 strings compare as datetimes (naive datetimes are read as UTC by Qdrant).
- ``in``/``not in`` need a list (FilterError otherwise); ``in []`` matches nothing, ``not in []`` everything.
- ``NOT`` negates the AND of its conditions (the reference's meaning; qdrant-haystack negates each one).
- Deviations inherent to Qdrant: ``==`` on a list-valued field matches when any element matches; ``==`` compares
  date strings as strings, not as instants.
"""

from datetime import datetime
from typing import Any

import numpy as np
import qdrant_edge as qe
from haystack.errors import FilterError

from haystack_fin.document_stores.qdrant_edge.converters import convert_id

# Top-level Document fields; any other undotted field name is a meta field (as in the reference implementation).
_DOCUMENT_FIELDS = frozenset({"id", "content", "blob", "meta", "score", "embedding", "sparse_embedding"})
_LOGICAL = frozenset({"AND", "OR", "NOT"})
_COMPARISON = frozenset({"==", "!=", ">", ">=", "<", "<=", "in", "not in"})


def match_nothing() -> qe.Filter:
    # An empty id set is the one condition Qdrant Edge evaluates to false for every point (an empty `should`
    # list matches everything, verified on qdrant-edge-py 0.9.0).
    return qe.Filter(must=[qe.HasIdCondition(set())])


def match_all() -> qe.Filter:
    return qe.Filter(must=[])


def convert_filters(filters: dict[str, Any] | qe.Filter | None) -> qe.Filter | None:
    """Convert a Haystack filter dict to a Qdrant Edge filter (None: no filter).

    A native ``qdrant_edge.Filter`` is passed through unchanged.

    :raises FilterError: malformed filter or a value the operator cannot compare.
    """
    if filters is None or isinstance(filters, qe.Filter):
        return filters
    if not isinstance(filters, dict):
        raise FilterError(f"filters must be a dict in Haystack filter syntax, got {type(filters).__name__}")
    if not filters:
        return None
    if "field" not in filters and "operator" not in filters:
        raise FilterError(
            f"invalid filter {filters!r}: expected a comparison ({{field, operator, value}}) or a logical "
            "({operator: AND|OR|NOT, conditions}) filter, see https://docs.haystack.deepset.ai/docs/metadata-filtering"
        )
    condition = _convert(filters)
    return condition if isinstance(condition, qe.Filter) else qe.Filter(must=[condition])


def _convert(node: Any) -> Any:
    if not isinstance(node, dict):
        raise FilterError(f"a filter condition must be a dict, got {node!r}")
    if "field" in node:
        return _comparison(node)
    return _logical(node)


def _require(node: dict[str, Any], *keys: str) -> None:
    for key in keys:
        if key not in node:
            raise FilterError(f"'{key}' key missing in {node}")


def _logical(node: dict[str, Any]) -> qe.Filter:
    _require(node, "operator", "conditions")
    operator, conditions = node["operator"], node["conditions"]
    if operator not in _LOGICAL:
        raise FilterError(f"Unknown logical operator '{operator}'. Valid operators are: {sorted(_LOGICAL)}")
    if not isinstance(conditions, list):
        raise FilterError(f"'conditions' of {operator} must be a list, got {type(conditions).__name__}")
    converted = [_convert(c) for c in conditions]
    if operator == "AND":
        return qe.Filter(must=converted)  # all([]) is True: an empty AND matches everything
    if operator == "OR":
        return qe.Filter(should=converted) if converted else match_nothing()
    # NOT is not(all(conditions)); not(all([])) is False.
    return qe.Filter(must_not=[qe.Filter(must=converted)]) if converted else match_nothing()


def field_key(field: str) -> str:
    """The payload path of a Haystack filter field."""
    if not isinstance(field, str) or not field:
        raise FilterError(f"filter 'field' must be a non-empty string, got {field!r}")
    if "." in field or field in _DOCUMENT_FIELDS:
        return field
    return f"meta.{field}"


def _comparison(node: dict[str, Any]) -> Any:
    _require(node, "operator", "value")
    operator, value = node["operator"], node["value"]
    if operator not in _COMPARISON:
        raise FilterError(f"Unknown comparison operator '{operator}'. Valid operators are: {sorted(_COMPARISON)}")
    key = field_key(node["field"])
    if operator == "==":
        return _equal(key, value)
    if operator == "!=":
        return qe.Filter(must_not=[_equal(key, value)])
    if operator in ("in", "not in"):
        if not isinstance(value, list):
            raise FilterError(
                f"Filter value must be a `list` when using operator '{operator}', received type '{type(value)}'"
            )
        any_of = _any_of(key, value)
        return any_of if operator == "in" else qe.Filter(must_not=[any_of])
    return _ordering(key, operator, value)


def _equal(key: str, value: Any) -> Any:
    if value is None:
        # Reference: a missing field reads as None. IsEmpty covers missing, null (and, unlike the reference, []).
        return qe.IsEmptyCondition(key)
    if key == "id" and isinstance(value, str):
        # Point ids are uuid5(Document.id): an id lookup beats a payload scan.
        return qe.HasIdCondition({convert_id(value)})
    if isinstance(value, bool):
        # qdrant-edge-py reads a Python bool as the integer 1/0 (bool subclasses int), which never matches a stored
        # JSON boolean; numpy.bool_ is converted as a boolean (verified on 0.9.0).
        return qe.FieldCondition(key, match=qe.MatchValue(np.bool_(value)))  # type: ignore[arg-type]  # see above
    if isinstance(value, str):
        return qe.FieldCondition(key, match=qe.MatchValue(value))
    if isinstance(value, int | float):
        # A range [v, v] matches int and float payloads alike (2 == 2.0 as in Python); MatchValue(int) would not
        # match a stored 2.0 and has no float form.
        return qe.FieldCondition(key, range=qe.RangeFloat(gte=float(value), lte=float(value)))
    raise FilterError(f"'==' on {key!r} cannot compare a value of type {type(value).__name__}: {value!r}")


def _any_of(key: str, values: list[Any]) -> Any:
    if not values:
        return match_nothing()
    if key == "id" and all(isinstance(v, str) for v in values):
        return qe.HasIdCondition({convert_id(v) for v in values})
    if all(isinstance(v, str) for v in values):
        return qe.FieldCondition(key, match=qe.MatchAny(list(values)))
    return qe.Filter(should=[_equal(key, v) for v in values])


def _ordering(key: str, operator: str, value: Any) -> Any:
    if value is None:
        return match_nothing()  # the reference never orders None
    bound = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}[operator]
    if isinstance(value, str):
        parsed = parse_iso_datetime(value)
        if parsed is None:
            raise FilterError(
                f"Can't compare strings using operators '>', '>=', '<', '<=' ({key!r} {operator} {value!r}). "
                "Strings are only comparable if they are ISO formatted dates."
            )
        return qe.FieldCondition(key, range=qe.RangeDateTime(**{bound: parsed.isoformat()}))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FilterError(
            f"Filter value can't be of type {type(value).__name__} using operators '>', '>=', '<', '<=' ({key!r})"
        )
    return qe.FieldCondition(key, range=qe.RangeFloat(**{bound: float(value)}))


def parse_iso_datetime(value: str) -> datetime | None:
    """The datetime an ISO 8601 string denotes, or None when it is not one."""
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
