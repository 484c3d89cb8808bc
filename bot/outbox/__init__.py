"""The outbox: every message papertide sends passes through here. The queue (queue.py,
the `outbox` table's one writer), settling (settle.py), the worker, its pacing and one-shot drain,
fan-out from matches (fanout.py reads and writes, fanout_plan.py decides), quiet hours,
the typed payloads, targets (targets.py, the `target` table's one writer) and the
Channel port (channel.py) that platforms implement.

May import: bot.store and the kernel.
"""
