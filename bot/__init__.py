"""papertide: follow research-paper topics in Slack, Discord and a weekly email digest."""

import os

# Set before anything imports numpy (bot/taste): a person's model is a few tiny
# matrix products and solves, where BLAS worker threads only add start-up and
# contention on a shared host (a 60x300 product took 10x the CPU with them, far more
# wall time under load). An operator's own setting wins.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

__version__ = "0.1.0"
