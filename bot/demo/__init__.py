"""`papertide demo`: the whole product offline (run.py), the local mail catcher and the
terminal previews of what Slack and Discord would show.

May import: bot.service and everything below it.
"""
