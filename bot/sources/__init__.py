"""Paper sources: one module each behind `bot.sources.base.Source`."""
