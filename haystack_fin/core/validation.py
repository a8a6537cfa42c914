"""The one check of integer parameters: components, stores and algorithms validate their counts through it, so a
bool (an int to Python) or a float is refused everywhere with the same message."""


def check_int(
    name: str, value: object, minimum: int = 1, *, maximum: int | None = None, optional: bool = False
) -> None:
    """Raise ``ValueError`` unless ``value`` is an integer (not a bool) in ``[minimum, maximum]``, or None when
    ``optional``."""
    if optional and value is None:
        return
    if not is_int(value, minimum, maximum=maximum):
        bound = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
        raise ValueError(f"{name} must be an integer {bound}{' or None' if optional else ''}, got {value!r}")


def is_int(value: object, minimum: int = 1, *, maximum: int | None = None) -> bool:
    """Whether ``value`` is an integer (not a bool) in ``[minimum, maximum]``: ``check_int``'s rule, for callers that
    report a bad value their own way (the CLI's argparse types)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        return False
    return maximum is None or value <= maximum


def check_ints(minimum: int = 1, *, optional: bool = False, **values: object) -> None:
    """``check_int`` over several parameters, given by name: ``check_ints(0, top_k=top_k, limit=limit)``."""
    for name, value in values.items():
        check_int(name, value, minimum, optional=optional)
