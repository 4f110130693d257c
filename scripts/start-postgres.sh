#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster for the reach-sql tests and print the
# environment the tests read:
#
#   eval "$(scripts/start-postgres.sh)"
#
# Idempotent: installs Debian's `postgresql` with apt-get only when no server
# binaries exist, creates the cluster once, starts it only when it is not
# running, and (re)creates roles and the database only when missing.
# Everything except the final `export` lines goes to stderr, so `eval` sees
# nothing else.
#
# Roles: an owner (creates tables, writes) and a reader that may only connect
# and SELECT; the reader's transactions are read-only by default and it cannot
# create temporary tables or run programs (COPY ... TO PROGRAM needs
# superuser or pg_execute_server_program, which it never gets).
#
# Neither role may signal other sessions or keep state on a pooled connection:
# EXECUTE on pg_terminate_backend, pg_cancel_backend, pg_notify and every
# advisory-lock function is revoked from PUBLIC in the database (function rights
# are per database), and set_config too, so a read cannot switch its own
# statement_timeout off. The owner gets back set_config and the advisory-lock
# functions, which reach's own PostgreSQL store (reach_core.store_pg) and the
# tests' owner connections use; agent SQL on the owner role (sql_execute) is
# refused them by reach's parser, and DISCARD ALL after each call releases any.
# The owner never gets the signalling functions back.
# Role defaults bound what a lost client leaves running: statement_timeout and
# idle_in_transaction_session_timeout for the reader, and
# client_connection_check_interval (a query whose client went away is stopped)
# for both. See docs/plugins/reach-sql.md.
set -euo pipefail

PORT="${REACH_PG_PORT:-54329}"
DATA="${REACH_PG_DATA:-/var/lib/postgresql/reach-test}"
DB="${REACH_PG_DB:-reach_test}"
OWNER="reach_owner"
OWNER_PW="${REACH_PG_OWNER_PASSWORD:-reach-owner-pw}"
READER="reach_reader"
READER_PW="${REACH_PG_READER_PASSWORD:-reach-reader-pw}"

log() { echo "start-postgres: $*" >&2; }

find_bindir() {
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

BINDIR="$(find_bindir)"
if [ -z "$BINDIR" ] || [ ! -x "$BINDIR/pg_ctl" ]; then
    log "installing postgresql with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
    BINDIR="$(find_bindir)"
fi

# Run a command as the postgres OS user (the server refuses to run as root).
as_pg() {
    if [ "$(id -un)" = "postgres" ]; then
        "$@"
    elif command -v runuser >/dev/null 2>&1; then
        runuser -u postgres -- "$@"
    else
        su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
}

SOCKDIR="$DATA/socket"
if [ ! -f "$DATA/PG_VERSION" ]; then
    log "creating cluster in $DATA"
    mkdir -p "$DATA"
    chown postgres:postgres "$DATA"
    chmod 700 "$DATA"
    as_pg "$BINDIR/initdb" -D "$DATA" -U postgres --auth-local=trust \
        --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >&2
    as_pg mkdir -p "$SOCKDIR"
fi

if as_pg "$BINDIR/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    log "cluster already running on port $PORT"
else
    log "starting cluster on 127.0.0.1:$PORT"
    as_pg "$BINDIR/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $PORT -k $SOCKDIR" start >&2
fi

psql_super() {
    as_pg "$BINDIR/psql" -h "$SOCKDIR" -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt "$@"
}

psql_super -d postgres >&2 <<SQL
DO \$\$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$OWNER') THEN
    CREATE ROLE $OWNER LOGIN PASSWORD '$OWNER_PW';
  END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$READER') THEN
    CREATE ROLE $READER LOGIN PASSWORD '$READER_PW';
  END IF;
END
\$\$;
ALTER ROLE $READER SET default_transaction_read_only = on;
ALTER ROLE $READER SET statement_timeout = '30s';
ALTER ROLE $READER SET idle_in_transaction_session_timeout = '60s';
ALTER ROLE $READER SET client_connection_check_interval = '1s';
ALTER ROLE $OWNER SET client_connection_check_interval = '1s';
SQL

if [ -z "$(psql_super -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ]; then
    log "creating database $DB"
    psql_super -d postgres -c "CREATE DATABASE $DB OWNER $OWNER" >&2
fi

psql_super -d "$DB" >&2 <<SQL
REVOKE ALL ON DATABASE $DB FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE $DB TO $OWNER;
GRANT CONNECT ON DATABASE $DB TO $READER;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO $READER;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO $READER;
ALTER DEFAULT PRIVILEGES FOR ROLE $OWNER IN SCHEMA public GRANT SELECT ON TABLES TO $READER;
DO \$\$
DECLARE f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'pg_catalog'
      AND (p.proname IN ('pg_terminate_backend', 'pg_cancel_backend', 'pg_notify', 'set_config')
           OR p.proname ~ '^pg_(try_)?advisory_')
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
  END LOOP;
END
\$\$;
DO \$\$
DECLARE f regprocedure;
BEGIN
  FOR f IN
    SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'pg_catalog' AND (p.proname = 'set_config' OR p.proname ~ '^pg_(try_)?advisory_')
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO $OWNER', f);
  END LOOP;
END
\$\$;
SQL

echo "export REACH_TEST_POSTGRES_URL=postgresql+psycopg://$OWNER:$OWNER_PW@127.0.0.1:$PORT/$DB"
echo "export REACH_TEST_POSTGRES_READ_URL=postgresql+psycopg://$READER:$READER_PW@127.0.0.1:$PORT/$DB"
