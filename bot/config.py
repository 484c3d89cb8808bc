"""Settings: environment variables `PAPERTIDE_*`, an optional `papertide.toml`.

Built once by the composition root and passed down; nothing reads the environment
anywhere else, and tests build their own `Settings(...)` instead of patching globals.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SecretsSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

DEFAULT_TOPICS_FILE = Path(__file__).parent / "data" / "topics.toml"
# Where container and systemd secrets appear as files (`papertide_secret_key`, …).
SECRET_DIRS = ("CREDENTIALS_DIRECTORY", "/run/secrets")
# The key papertide shipped with before keys were required: refused like an unset one.
OLD_DEFAULT_KEY = "dev-insecure-change-me"
# Used only where an unset key is allowed (loopback, demo, tests): random per process,
# so links can never be forged with a key printed in the source.
_PROCESS_KEY = secrets.token_urlsafe(32)


class Settings(BaseSettings):
    """Every setting papertide reads. Descriptions feed `papertide config` and the README."""

    model_config = SettingsConfigDict(
        env_prefix="PAPERTIDE_", toml_file="papertide.toml", extra="ignore"
    )

    # Store
    database_url: str = Field(
        "sqlite:///subscriptions.db",
        description="SQLAlchemy URL: sqlite:///file.db or postgresql://user@host:5432/db",
    )
    topics_file: Path = Field(DEFAULT_TOPICS_FILE, description="TOML catalog of topics")

    # Sources
    sources: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["arxiv-rss", "arxiv"],
        description="Comma-separated sources: arxiv-rss, arxiv, sample, feed:<url>",
    )
    arxiv_api_url: str = Field(
        "https://export.arxiv.org/api/query", description="arXiv API query endpoint, used as is"
    )
    arxiv_rss_url: str = Field(
        "https://rss.arxiv.org/rss/", description="Base of arXiv RSS feeds; `cs.LG+cs.AI` appended"
    )
    arxiv_delay_seconds: float = Field(
        3.0, description="Seconds between arXiv requests (all arXiv sources together)"
    )
    arxiv_lookback_days: int = Field(
        3, description="How far back the first poll of a source reaches"
    )
    arxiv_categories: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Categories to poll; empty means the union of the topics' categories",
    )
    http_timeout_seconds: float = Field(30.0, description="Timeout of one HTTP request to a source")
    fetch_max_bytes: int = Field(
        32 * 1024 * 1024,
        gt=0,
        description="Most bytes one fetch from a source may send on the wire (compressed)",
    )
    fetch_max_inflated_bytes: int = Field(
        64 * 1024 * 1024,
        gt=0,
        description="Most bytes one fetch's body may inflate to (gzip, deflate)",
    )
    fetch_deadline_seconds: float = Field(
        120.0,
        gt=0,
        description="Whole-fetch deadline, retries and body included; a trickling server fails",
    )
    retry_after_max_seconds: float = Field(
        60.0,
        ge=0,
        description="Longest Retry-After a fetch waits; a longer one fails it until the next poll",
    )
    poll_interval_minutes: int = Field(
        60, description="Interval of the poll job for non-RSS sources"
    )
    user_agent: str = Field(
        "papertide/0.1 (+https://github.com/papertide/papertide)",
        description="User-Agent sent to sources",
    )

    # Outbox and delivery
    worker_concurrency: int = Field(8, description="Messages a worker sends at once")
    outbox_batch_size: int = Field(100, description="Rows a worker claims at a time")
    outbox_lease_seconds: int = Field(60, description="How long a claimed row stays leased")
    outbox_max_attempts: int = Field(8, description="Attempts before a message is dead")
    slack_rate_per_second: float = Field(
        1.0, description="Messages per second to one Slack channel"
    )
    discord_rate_per_second: float = Field(
        0.5, description="Messages per second to one Discord channel"
    )
    email_rate_per_second: float = Field(
        10.0, description="Messages per second through the SMTP relay"
    )
    group_threshold: int = Field(
        5, description="More papers than this for one channel in one poll are sent as one thread"
    )
    console_out: str = Field(
        "-", description="Console adapter output: '-' for stdout or a file path"
    )
    apprise_rate_per_second: float = Field(
        0.33, description="Messages per second to one Apprise target (Telegram groups: 20/min)"
    )
    apprise_timeout_seconds: float = Field(
        30.0, description="Longest wait for one Apprise delivery before it is retried"
    )
    allow_private_urls: bool = Field(
        False,
        description="Allow webhook/Apprise targets and fetched URLs on internal addresses",
    )
    import_max_bytes: int = Field(
        5_000_000, description="Largest library export /papers import reads (file or URL)"
    )

    # Slack
    slack_bot_token: SecretStr | None = Field(
        None, description="Slack bot token (xoxb-…); turns Slack on"
    )
    slack_signing_secret: SecretStr | None = Field(None, description="Slack signing secret")
    slack_app_token: SecretStr | None = Field(
        None, description="Slack app-level token (xapp-…) for Socket Mode"
    )
    slack_command: str = Field("/papers", description="Slack slash command")
    slack_api_url: str = Field("https://slack.com/api/", description="Slack Web API base URL")

    # Discord
    discord_token: SecretStr | None = Field(None, description="Discord bot token; turns Discord on")
    discord_application_id: str | None = Field(None, description="Discord application id")
    discord_api_url: str = Field("https://discord.com/api/v10", description="Discord REST base URL")
    channel_changes: str = Field(
        "managers", description="Who may change a channel's subscriptions: managers or everyone"
    )

    # Email
    smtp_host: str = Field("localhost", description="SMTP relay host")
    smtp_port: int = Field(25, description="SMTP relay port")
    smtp_username: str | None = Field(None, description="SMTP user name")
    smtp_password: SecretStr | None = Field(None, description="SMTP password")
    smtp_starttls: bool = Field(False, description="Use STARTTLS")
    smtp_tls: bool = Field(False, description="Use implicit TLS")
    mail_from: str = Field(
        "papertide <papertide@localhost>", description="From header of every mail"
    )
    dkim_selector: str | None = Field(
        None, description="DKIM selector; signing is on when a key is set"
    )
    dkim_domain: str | None = Field(None, description="DKIM signing domain (d=)")
    dkim_private_key_file: Path | None = Field(None, description="PEM private key for DKIM")
    hard_bounce_limit: int = Field(3, description="Hard bounces before an address is disabled")

    # Digest and momentum
    digest_weekday: int = Field(0, description="Default digest weekday, 0 = Monday")
    digest_hour: int = Field(8, description="Default digest hour in the recipient's time zone")
    digest_timezone: str = Field("UTC", description="Default time zone of new recipients")
    digest_papers_per_topic: int = Field(
        8, description="Papers per topic in a digest before 'and N more'"
    )
    spike_p_value: float = Field(
        0.01, description="Significance level of the spike test (after BH)"
    )
    spike_min_count: int = Field(10, description="Minimum papers in four weeks for a spike")
    spike_min_rise_pct: float = Field(
        50.0, description="Minimum rise of the topic's share, in percent"
    )
    emerging_min_count: int = Field(
        5, ge=2, description="Minimum papers this week for an emerging phrase"
    )
    emerging_cover_pct: float = Field(
        50.0,
        gt=0,
        le=100,
        description="A topic holding this share of a phrase's papers covers it (not emerging)",
    )
    emerging_limit: int = Field(20, ge=1, description="Most emerging phrases kept per week")

    # Ask about a topic: answers from the papers; a model is optional
    llm_url: str | None = Field(
        None,
        description="OpenAI-compatible chat-completions URL, e.g. "
        "http://127.0.0.1:8081/v1/chat/completions; with PAPERTIDE_LLM_MODEL turns model "
        "answers on",
    )
    llm_model: str | None = Field(None, description="Model name sent to PAPERTIDE_LLM_URL")
    llm_api_key: SecretStr | None = Field(
        None, description="Bearer key for PAPERTIDE_LLM_URL, when it needs one"
    )
    llm_timeout_seconds: float = Field(
        20.0, description="Seconds to wait for the model before answering from passages alone"
    )
    ask_per_user_per_hour: int = Field(
        20, description="Questions one person may ask per hour (chat; model answers on the web)"
    )

    # Web
    public_url: str = Field("http://127.0.0.1:8080", description="Base of every absolute link")
    secret_key: SecretStr | None = Field(
        None,
        description=(
            "Signs every link papertide mails; required unless PAPERTIDE_PUBLIC_URL is loopback"
            " (also read from a file papertide_secret_key in $CREDENTIALS_DIRECTORY or"
            " /run/secrets)"
        ),
    )
    confirm_ttl_hours: int = Field(48, description="Hours a confirmation link stays valid")
    confirm_mails_per_ip_per_hour: int = Field(
        10, description="Confirmation mails one client IP may ask for per hour"
    )
    confirm_mails_per_chat_user_per_hour: int = Field(
        5, description="Confirmation mails one chat user may ask for per hour"
    )
    max_alerts_per_person: int = Field(
        50, description="Keyword alerts one person (chat user or mailbox) may keep"
    )
    trust_forwarded_for: bool = Field(
        False,
        description="Take the client IP from X-Forwarded-For (only behind your own proxy)",
    )
    metrics_token: SecretStr | None = Field(
        None, description="Bearer token /metrics requires; unset turns /metrics off"
    )
    pacing_scope: Literal["auto", "process", "store"] = Field(
        "auto",
        description=(
            "Where per-channel pacing lives: store (shared by every worker), process, or"
            " auto (store on PostgreSQL, process on SQLite)"
        ),
    )

    @field_validator("llm_url")
    @classmethod
    def _http_only(cls, value: str | None) -> str | None:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value or None

    @field_validator("sources", "arxiv_categories", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("secret_key", mode="after")
    @classmethod
    def _blank_is_unset(cls, value: SecretStr | None) -> SecretStr | None:
        # A secret file ends with a newline; an empty variable means "not set".
        if value is None or not value.get_secret_value().strip():
            return None
        return SecretStr(value.get_secret_value().strip())

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Explicit arguments beat the environment, which beats secret files, which beat
        # papertide.toml.
        dirs = [d for d in (os.environ.get(SECRET_DIRS[0]), SECRET_DIRS[1]) if d]
        found = [Path(d) for d in dirs if Path(d).is_dir()]
        files = SecretsSettingsSource(settings_cls, secrets_dir=found or None)
        return (init_settings, env_settings, files, TomlConfigSettingsSource(settings_cls))

    def signing_key(self) -> str:
        """The key every link is signed with: the configured one, else this process's own.

        `serve` and `worker` call `require_secret_key` first, so only loopback installs,
        the demo and tests ever sign with the per-process key.
        """
        if self.secret_key is not None and self.secret_key.get_secret_value() != OLD_DEFAULT_KEY:
            return self.secret_key.get_secret_value()
        return _PROCESS_KEY

    def has_secret_key(self) -> bool:
        key = self.secret_key.get_secret_value() if self.secret_key else ""
        return bool(key) and key != OLD_DEFAULT_KEY

    def effective(self) -> dict[str, str]:
        """Every setting as text, secrets masked, for `papertide config`."""
        shown: dict[str, str] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name == "secret_key" and not self.has_secret_key():
                text = "default"  # unset: say so, rather than mask a value that is not there
            elif isinstance(value, SecretStr):
                text = "********" if value.get_secret_value() else ""
            elif isinstance(value, list):
                text = ",".join(mask_url(str(v)) for v in value)
            elif value is None:
                text = ""
            elif name == "database_url":
                text = mask_database_url(str(value))
            else:
                text = mask_url(str(value))
            shown[f"PAPERTIDE_{name.upper()}"] = text
        return shown


# Query parameters whose values are credentials (matched as substrings, any case).
_SECRET_PARAMS = ("pass", "pwd", "secret", "token", "key", "auth", "sig", "credential", "session")
_MASK = "****"


def _secret_param(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_PARAMS)


def mask_url(text: str) -> str:
    """`text` with the credentials of any URL inside masked: user:pass@, token@ and
    token-like query parameters. `feed:https://…` keeps its prefix."""
    prefix, sep, url = text.partition("://")
    if not sep:
        return text
    head, _, scheme = prefix.rpartition(":")  # "feed:https" -> ("feed", "https")
    try:
        parts = urlsplit(f"{scheme}://{url}")
    except ValueError:
        return f"{head + ':' if head else ''}{scheme}://{_MASK}"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    if "@" not in parts.netloc and not any(_secret_param(k) for k, _ in pairs):
        return text  # nothing to hide: shown exactly as configured
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        # A lone user part in an http URL is a token more often than a name.
        netloc = f"{user}:{_MASK}@{host}" if colon and user else f"{_MASK}@{host}"
    query = urlencode([(k, _MASK if _secret_param(k) else v) for k, v in pairs], safe="*")
    masked = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    return f"{head}:{masked}" if head else masked


def mask_database_url(url: str) -> str:
    """The database URL without its password (in the userinfo or as `?password=`)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    main, question, query = rest.partition("?")
    # The last @ before the query ends the userinfo, even when the password holds @ or /.
    creds, at, host = main.rpartition("@")
    if at and ":" in creds:
        main = f"{creds.split(':', 1)[0]}:{_MASK}@{host}"
    if question:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, _MASK if _secret_param(k) else v) for k, v in pairs], safe="*")
    return f"{scheme}://{main}" + (f"?{query}" if question else "")
