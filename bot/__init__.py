"""papertide: follow research-paper topics in Slack, Discord and a weekly email digest."""

__version__ = "0.1.0"
