"""A ranking per person: paper text as tf-idf rows (features.py), a small linear model
trained on one person's signals (model.py), and the plan that turns signals into an
order and "you may have missed" picks with their reasons (plan.py); many readers at
once, one matrix product per 512 readers (batch.py); readers' models kept while their
signals stay the same (cache.py). Pure: no I/O, no clock; the readers live in
bot/subscriptions/taste.py.

May import: bot.ask (its words and stems), bot.matching, bot.store and the kernel.
"""
