"""Apprise: Mattermost, Microsoft Teams, Matrix, Telegram, Zulip, ntfy and 100+ other
services through one maintained library, for targets given as Apprise URLs. The only
package that imports `apprise`."""
