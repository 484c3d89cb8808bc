"""The web app's handlers and page helpers; `bot.web` assembles them into one app.

Nothing here is imported by the core except `templating` and `mails` (pure rendering).
"""
