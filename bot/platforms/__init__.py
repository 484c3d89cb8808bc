"""Platforms: the only place a chat or mail SDK is imported. One folder (or module) per
platform: render (pure), channel (the outbox's Channel port), app (the chat app), and a
plugin that the one registry (registry.py) loads only when the platform is on.

May import: bot.chat and everything below it. Never imported by the core.
"""
