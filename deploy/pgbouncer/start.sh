#!/bin/sh
# PgBouncer's entry point (deploy/pgbouncer/Dockerfile): the auth file from the environment (passwords
# are never baked into the image), then PgBouncer with its arguments and pgbouncer.ini.
#   bill             the app's user; PgBouncer logs in to Postgres with it (POSTGRES_PASSWORD)
#   pgbouncer_stats  stats_users: SHOW POOLS/STATS on the admin console, for the exporter (PGBOUNCER_STATS_PASSWORD)
# tests/integration/operations/test_pgbouncer_stats.py runs this script with Debian's pgbouncer.
set -eu
: "${POSTGRES_PASSWORD:?}" "${PGBOUNCER_STATS_PASSWORD:?}"
auth_file=${PGBOUNCER_AUTH_FILE:-/tmp/userlist.txt}
config=${PGBOUNCER_CONFIG:-/etc/pgbouncer/pgbouncer.ini}
quoted() { printf '%s' "$1" | sed 's/"/""/g'; }  # the auth file's quoting: a " is written twice
umask 077
printf '"bill" "%s"\n"pgbouncer_stats" "%s"\n' \
  "$(quoted "$POSTGRES_PASSWORD")" "$(quoted "$PGBOUNCER_STATS_PASSWORD")" > "$auth_file"
exec "${PGBOUNCER:-pgbouncer}" "$@" "$config"
