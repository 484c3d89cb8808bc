"""The topic catalog: the TOML file (file.py), its sync into the store and the refiling
of stored papers (sync.py, refile.py), finding and listing topics (lookup.py), papers
as listed (papers.py), and momentum with its statistics (momentum.py pure, stats.py).

May import: bot.matching, bot.store and the kernel.
"""
