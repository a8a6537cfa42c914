"""The filing graph: entities per chunk, table cells as facts, typed edges with confidence tiers.

``entities`` reads a chunk's text and meta into normalized entities, ``facts`` turns numeric table cells into facts,
``edges`` links chunks and facts with confidence tiers, ``build`` assembles one networkx graph per filing from plain
chunk dicts. Nothing here imports Haystack.
"""
