"""Document stores shipped with haystack-fin."""
