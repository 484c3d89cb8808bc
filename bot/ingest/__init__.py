"""Ingest: poll sources (poll.py) through one HTTP client and arXiv limiter (http.py),
bodies read within caps (body.py), normalise (normalize.py), deduplicate and persist
papers (persist.py, the `paper` table's one writer),
record their matches, and keep each source's state (state.py); arXiv's dates and
announcement schedule (dates.py, announce.py), `papertide status` (status.py), and the
sources themselves with their one registry (sources/).

May import: bot.ask (its full-text index writer), bot.matching, bot.store and the kernel.
"""
