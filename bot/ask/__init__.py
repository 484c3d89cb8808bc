"""Ask: answers to a question from the stored papers, with citations.

The full-text index over every paper's title, abstract, authors and affiliations
(`index.py`, the one writer of `paper_search` and its queue: ingest queues papers in its
transaction, the service's indexer job indexes them after the commit), its
engine-specific reads (`search.py`: SQLite FTS5, PostgreSQL tsvector + GIN), the pure
steps that turn a question into terms and a time window (`question.py`), rank the
candidates (`rank.py`), pick and highlight sentences (`extract.py`) and shape the answer
(`answer.py`), the optional OpenAI-compatible model (`llm.py`), the per-user quota
(`quota.py`, counted by bot.store.quotas) and the one entry point, `Asker`
(`service.py`). Renderers for each medium live with the medium (Slack, Discord, web
templates); `plain.py` is the text one the CLI uses.

May import: bot.matching, bot.store and the kernel.
"""
