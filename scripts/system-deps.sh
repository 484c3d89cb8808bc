#!/usr/bin/env bash
# Installs and starts what the test suite needs outside Python: Debian's chromium for
# the browser tests and a PostgreSQL server on 127.0.0.1:5432. Safe to run repeatedly.
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v chromium >/dev/null 2>&1; then
  echo "system-deps: installing Debian's chromium" >&2
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
fi

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "system-deps: installing PostgreSQL" >&2
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq postgresql >/dev/null
  fi
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "system-deps: starting PostgreSQL $version" >&2
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "system-deps: PostgreSQL is not reachable on 127.0.0.1:5432; the suite needs it" >&2
  exit 1
fi
# The suite connects as postgres with trust auth to the database `test`.
if ! psql -h 127.0.0.1 -U postgres -d test -Atc 'select 1' >/dev/null 2>&1; then
  as_root su postgres -c "createdb test" 2>/dev/null || psql -h 127.0.0.1 -U postgres -c 'create database test' >/dev/null
fi
