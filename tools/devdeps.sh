#!/usr/bin/env bash
# devdeps.sh - copies SQLite's header and static library from this machine into .devdeps/ (ignored
# by git), for building the campaign on a machine without libsqlite3-dev (e.g. the GPU machine):
# carry .devdeps/ there and `make` picks it up when /usr/include/sqlite3.h is absent.
set -eu
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hdr=/usr/include/sqlite3.h
lib=
for l in /usr/lib/x86_64-linux-gnu/libsqlite3.a /usr/lib/aarch64-linux-gnu/libsqlite3.a /usr/lib64/libsqlite3.a \
	/usr/lib/libsqlite3.a /usr/local/lib/libsqlite3.a; do
	[ -f "$l" ] && { lib=$l; break; }
done
if [ ! -f "$hdr" ] || [ -z "$lib" ]; then
	echo "devdeps: no sqlite3.h and libsqlite3.a here (apt-get install libsqlite3-dev)" >&2
	exit 1
fi
mkdir -p "$ROOT/.devdeps"
cp "$hdr" "$ROOT/.devdeps/sqlite3.h"
[ -f /usr/include/sqlite3ext.h ] && cp /usr/include/sqlite3ext.h "$ROOT/.devdeps/"
cp "$lib" "$ROOT/.devdeps/libsqlite3.a"
echo "devdeps: $ROOT/.devdeps holds sqlite3.h and libsqlite3.a ($(du -sh "$ROOT/.devdeps" | cut -f1))"
