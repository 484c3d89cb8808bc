"""Discord: embeds, the delivery channel over REST and the gateway app for `/papers`."""
