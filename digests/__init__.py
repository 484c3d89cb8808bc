"""Weekly digests per recipient: load (store → plain data), build (pure), render
(jinja2, pure), schedule (one outbox row per recipient per ISO week), links (the port
for signed links) and the bundled sample. SMTP lives in bot.platforms.email.

May import: bot.chat and everything below it; not bot.web or bot.platforms.
"""
