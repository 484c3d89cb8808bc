"""Weekly digests: momentum statistics, per-recipient building, rendering, mailing."""
