"""Matching: the query language (arXiv's search syntax), text normalisation, the pattern
index and the one compiled engine for topics and alerts; `matches.py` is the one writer
of which paper matched what.

May import: bot.store and the kernel.
"""
