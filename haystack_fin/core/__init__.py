"""Plain, typed algorithms of haystack-fin. Nothing in this package imports Haystack."""
