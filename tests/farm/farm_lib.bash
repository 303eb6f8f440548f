# farm_lib.bash - sourced by the farm tests: a throwaway PostgreSQL server, plugin sets, agents.
B=${MI_BUILD:?}
S=${MI_SRC:?}
T=$(mktemp -d /tmp/mi-farm.XXXXXX)
chmod 755 "$T"
PIDS=()
NETNS=()
farm_cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for n in "${NETNS[@]}"; do ip netns del "$n" 2>/dev/null || true; done
  for v in "${VETH[@]:-}"; do [ -n "$v" ] && ip link del "$v" 2>/dev/null || true; done
  bash "$S/tools/pg-test-server.sh" stop "$T/pg" >/dev/null 2>&1 || true
  rm -rf "$T"
}
trap farm_cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.log; do echo "== $f"; tail -20 "$f"; done; exit 1; }

[ -x "$B/bin/mi-agent" ] || { echo "skip: mi-agent not built"; exit 77; }
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "skip: no PostgreSQL server (apt-get install postgresql)"; exit 77; }
command -v psql >/dev/null || { echo "skip: no psql"; exit 77; }

# A plugin folder holding only the named plugins (manifest, library, config files).
plugin_set() { # DIR PLUGIN...
  local d=$1; shift
  mkdir -p "$d"
  for p in "$@"; do
    local so; so=$(sed -n 's/^library: *//p' "$B/plugins/$p.mi-plugin")
    ln -s "$B/plugins/$p.mi-plugin" "$B/plugins/$so" "$d/"
  done
  for c in "$B"/plugins/*.conf; do [ -e "$c" ] && ln -sf "$c" "$d/"; done
}

# psql as the admin: one value out.
q() { psql "$MI_PG_URL" -XAtq -c "$1"; }
