"""Slack: Block Kit rendering, the delivery channel and the Bolt app for `/papers`."""
