"""The service: the ONE composition root (root.py) that every entry point opens, the
long-running `serve` and `worker` (runner.py, web.py), the scheduler (APScheduler, the
only place it is imported) and the PostgreSQL leader lock.

May import: every package of bot and digests, except bot.cli and bot.demo.
"""
