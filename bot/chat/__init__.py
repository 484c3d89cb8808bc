"""Chat: the platform-neutral `/papers` grammar (commands.py dispatches; follow_cmds.py,
alert_cmds.py and ask_cmds.py hold the handlers; context.py what they share), its text
helpers (text.py) and the record of platform events already handled (events.py). No SDK
here: Slack and Discord adapters build a CommandContext, call `run_command` and render
the Reply.

May import: bot.subscriptions, bot.outbox, bot.catalog, bot.ingest, bot.ask,
bot.matching, bot.store and the kernel.
"""
