"""`python -m bot.cli` runs the papertide command line."""

from bot.cli import main

main()
