"""The web app: public topic pages and feeds, the email subscription pages, /healthz and
/metrics (aiohttp, jinja2, no JavaScript). Handlers are thin: read the request, call
one function of a package below, render a page.

May import: bot.chat and everything below it; not bot.platforms or digests.
"""
