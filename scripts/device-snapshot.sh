#!/usr/bin/env bash
# A snapshot of HEAD for a device run: `git archive HEAD` and the carried .debs/ in .snap/
# (ignored by git), so that a device call builds exactly a commit, never uncommitted edits
# (a helper's unfinished file would break the build and waste the call's device time).
#   bash scripts/device-snapshot.sh
#   run(command="cd .snap && bash scripts/device-build.sh && ...", carry=[".snap"])
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .debs ] || { echo "no .debs/: run scripts/fetch-debs.sh first" >&2; exit 1; }
rm -rf .snap
mkdir .snap
git archive HEAD | tar -x -C .snap
git rev-parse --short HEAD > .snap/COMMIT  # what benchmarks record (the snapshot has no .git)
cp -r .debs .snap/
echo ".snap/ holds $(git rev-parse --short HEAD) ($(du -sh .snap | cut -f1)); carry=[\".snap\"], command starting with 'cd .snap && '"
