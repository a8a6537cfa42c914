"""Query-side algorithms: filing scope, FLAM Item routing, trees and tree search, reranking, passage windows."""
