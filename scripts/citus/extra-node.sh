#!/usr/bin/env bash
# One more Citus worker node beside the cluster of ../shared/tools/citus/cluster.sh (which runs three),
# for the scale-out test: its own PostgreSQL 15 cluster with Citus under $CITUS_DIR/w3 on port $CITUS_PORT+3.
#
#   extra-node.sh up DATABASE    initdb/start it (idempotent), CREATE EXTENSION citus in DATABASE; prints its port
#   extra-node.sh down           stop it and delete its data directory
#   extra-node.sh wal-level L    set wal_level to L (logical | replica) on every node there is and restart
#                                them: shards move without blocking writes only under logical
#
# Env as cluster.sh: CITUS_DIR (/tmp/citus-cluster), CITUS_PORT (9700). As root the server runs as postgres.
set -euo pipefail
PGBIN=/usr/lib/postgresql/15/bin
ROOT=${CITUS_DIR:-/tmp/citus-cluster}
PORT=$(( ${CITUS_PORT:-9700} + 3 ))
DIR=$ROOT/w3
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
psql_at() { PGOPTIONS='-c client_min_messages=warning' psql -X -v ON_ERROR_STOP=1 -q -At -h 127.0.0.1 -p "$PORT" -U postgres "$@"; }

case "${1:-}" in
  up)
    database=${2:?database name}
    [ -f "$DIR/PG_VERSION" ] || as_pg "$PGBIN/initdb -D $DIR -U postgres --auth=trust --no-sync >/dev/null"
    cat > "$DIR/citus-node.conf" <<CONF
wal_level = ${CITUS_WAL_LEVEL:-replica}
shared_preload_libraries = 'citus'
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$ROOT'
max_connections = 200
max_worker_processes = 32
CONF
    [ "$(id -u)" = 0 ] && chown postgres "$DIR/citus-node.conf"
    grep -q "^include_if_exists = 'citus-node.conf'" "$DIR/postgresql.conf" || echo "include_if_exists = 'citus-node.conf'" >> "$DIR/postgresql.conf"
    as_pg "$PGBIN/pg_ctl -D $DIR status >/dev/null 2>&1 || $PGBIN/pg_ctl -D $DIR -l $DIR/server.log -w -t 60 start >/dev/null"
    psql_at -d postgres -c "DROP DATABASE IF EXISTS $database WITH (FORCE)" -c "CREATE DATABASE $database"
    psql_at -d "$database" -c 'CREATE EXTENSION citus'
    echo "$PORT"
    ;;
  down)
    [ -f "$DIR/PG_VERSION" ] && as_pg "$PGBIN/pg_ctl -D $DIR -m fast -w stop >/dev/null 2>&1" || true
    rm -rf "$DIR"
    ;;
  wal-level)
    level=${2:?logical or replica}
    for name in coord w1 w2 w3; do
      [ -f "$ROOT/$name/PG_VERSION" ] || continue
      port=$(sed -n 's/^port = //p' "$ROOT/$name/citus-node.conf")
      # ALTER SYSTEM lands in postgresql.auto.conf, read after the node's own settings file.
      PGOPTIONS='-c client_min_messages=warning' psql -X -v ON_ERROR_STOP=1 -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c "ALTER SYSTEM SET wal_level = '$level'"
      as_pg "$PGBIN/pg_ctl -D $ROOT/$name -l $ROOT/$name/server.log -m fast -w -t 60 restart >/dev/null"
    done
    ;;
  *) echo "usage: $0 up DATABASE | down | wal-level logical|replica" >&2; exit 2 ;;
esac
