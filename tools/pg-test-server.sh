#!/usr/bin/env bash
# pg-test-server.sh - a throwaway PostgreSQL server for tests: `start DIR [ADDR,...]` makes a
# cluster in DIR (initdb as a non-root user), listens on 127.0.0.1 (plus ADDRs) on a free port
# and on a unix socket in DIR, offers TLS with a self-signed certificate, and writes DIR/env
# (PGHOST, PGPORT, MI_PG_URL, MI_PG_PASSWORD); `stop DIR` stops it and removes DIR.
set -euo pipefail

cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR [ADDR,...]" >&2; exit 2; }
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "pg-test-server: no initdb (apt-get install postgresql)" >&2; exit 77; }

as_user() { # initdb and postgres refuse to run as root
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "$cmd" = stop ]; then
  [ -d "$dir/data" ] && as_user "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  exit 0
fi
[ "$cmd" = start ] || { echo "pg-test-server: unknown command $cmd" >&2; exit 2; }

extra=${3:-}
mkdir -p "$dir"
chmod 755 "$dir"
[ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
pw=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s\n' "$pw" > "$dir/pw"
[ "$(id -u)" -eq 0 ] && chown postgres: "$dir/pw"
as_user "$bin/initdb" -D "$dir/data" -U mi_admin --pwfile="$dir/pw" --auth-local=trust \
  --auth-host=scram-sha-256 -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log" >&2; exit 1; }
rm -f "$dir/pw"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
listen=127.0.0.1${extra:+,$extra}
{
  echo "listen_addresses = '$listen'"
  echo "port = $port"
  echo "unix_socket_directories = '$dir'"
  echo "fsync = off"
  echo "max_connections = 60"
} >> "$dir/data/postgresql.conf"
[ -n "$extra" ] && echo "host all all 0.0.0.0/0 scram-sha-256" >> "$dir/data/pg_hba.conf"
if command -v openssl >/dev/null 2>&1; then
  as_user openssl req -new -x509 -days 1 -nodes -subj /CN=localhost \
    -keyout "$dir/data/server.key" -out "$dir/data/server.crt" >/dev/null 2>&1 &&
    as_user chmod 600 "$dir/data/server.key" && echo "ssl = on" >> "$dir/data/postgresql.conf"
fi
as_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start >/dev/null ||
  { cat "$dir/server.log" >&2; exit 1; }
cat > "$dir/env" <<EOT
PGHOST=$dir
PGPORT=$port
MI_PG_PASSWORD=$pw
MI_PG_URL=postgresql://mi_admin:$pw@127.0.0.1:$port/postgres
EOT
chmod 644 "$dir/env"
echo "pg-test-server: running on 127.0.0.1:$port (socket in $dir)"
