"""The ground floor every op runs on: the tape and the VJP registry (``tape``), the block map and argument
checks (``common``), resolving pending sums and relayouts (``relayout``), the one data-movement primitive
(``movement``) and the dispatch plans (``plans``). It imports only the basement and ``array.py``, never the ops
above it (``tests/test_import_graph.py``).
"""
