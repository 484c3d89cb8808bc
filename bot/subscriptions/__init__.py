"""Subscriptions: who follows what, and how they hear about it. Follows (follows.py),
keyword alerts (alerts.py), people and their mailbox (people.py), email double opt-in
(optin.py, chat_digest.py), digest preferences (preferences.py), address checks
(addresses.py), signed link tokens (tokens.py), the mails the flow sends (mails.py) and
the ONE place where public routes and links are spelled (urls.py).

May import: bot.outbox, bot.catalog, bot.ingest, bot.matching, bot.store and the kernel.
"""
