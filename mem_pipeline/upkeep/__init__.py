"""Upkeep: what keeps a store sound over time, apart from the adds and searches themselves.

- ``recovery``: the journal around writes that span several points, and completing a write a
  crash interrupted (on open for an embedded store);
- ``reindex``: bringing what an older version wrote up to date (lexical vectors, reply links,
  repeat keys);
- ``prune``: finding facts whose strength has faded;
- ``repair``: dropping points the engine can no longer read.
"""
