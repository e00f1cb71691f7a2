#!/usr/bin/env bash
# Where ../shared/tools/citus is: $CITUS_TOOLS, else beside the checkout (../shared/tools/citus, also from
# a git worktree or a clone elsewhere: the main checkout's parent), else /work/shared/tools/citus.
# Prints the folder, or nothing (exit 1) when there is none.
here=$(cd "$(dirname "$0")/../.." && pwd)
common=$(git -C "$here" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
for candidate in "${CITUS_TOOLS:-}" "$(dirname "$here")/shared/tools/citus" "${common:+$(dirname "$(dirname "$common")")/shared/tools/citus}" \
  "$(dirname "$(dirname "$here")")/shared/tools/citus" /work/shared/tools/citus; do
  [ -n "$candidate" ] && [ -x "$candidate/cluster.sh" ] && { (cd "$candidate" && pwd); exit 0; }
done
exit 1
