#!/usr/bin/env bash
# Review a demo PR: the looped engine in examples/demo_engine becomes branch `main` of a
# throwaway repository, the patch becomes branch `feature`, and rltrefactor reviews it.
#
#   scripts/demo.sh [PATCH] [REVIEW OPTIONS...]
#
# PATCH defaults to examples/demo_prs/defects.patch; REVIEW OPTIONS go to
# `rltrefactor review --diff main` unchanged. Set RLTREFACTOR to run another executable.
set -euo pipefail

project_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
patch="${1:-$project_root/examples/demo_prs/defects.patch}"
if [[ ! -f "$patch" ]]; then
    echo "scripts/demo.sh: patch: no such file (got $patch); pass a patch from examples/demo_prs/" >&2
    exit 2
fi
patch="$(cd "$(dirname "$patch")" && pwd)/$(basename "$patch")"

work_dir="$(mktemp -d)"
trap 'rm -rf "$work_dir"' EXIT

repo="$work_dir/loopy-engine"
cp -R "$project_root/examples/demo_engine" "$repo"
find "$repo" -name __pycache__ -type d -prune -exec rm -rf {} +

git_as_demo() {
    git -c user.name=demo -c user.email=demo@example.invalid -c commit.gpgsign=false "$@"
}

cd "$repo"
git init -q -b main
git add -A
git_as_demo commit -q -m "loopy-engine: base"
git checkout -q -b feature
git apply "$patch"
git add -A
git_as_demo commit -q -m "feature: $(basename "$patch")"

echo "Reviewing $(basename "$patch") (branch feature against main of the demo engine)"
status=0
"${RLTREFACTOR:-rltrefactor}" review --diff main "${@:2}" || status=$?
exit "$status"
