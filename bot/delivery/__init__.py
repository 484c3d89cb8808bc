"""Delivery channels: one module per platform behind `bot.delivery.base.Channel`."""
