#!/bin/sh
# Build workload.c with the flags in flags.conf (PGO=yes: instrumented build, a training run,
# then a build that uses the profile) and run it three times; print the fastest run time.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="${HONE_WORKDIR:-/tmp}/gcc-flags"
mkdir -p "$out"
. "$here/flags.conf"
flags="$OPT -march=$MARCH"
[ "$UNROLL" = yes ] && flags="$flags -funroll-loops"
[ "$LTO" = yes ] && flags="$flags -flto"
cd "$out"
rm -f ./*.gcda
if [ "$PGO" = yes ]; then
  gcc $flags -fprofile-generate -o workload "$here/workload.c"
  ./workload >/dev/null
  gcc $flags -fprofile-use -fprofile-correction -Wno-missing-profile -o workload "$here/workload.c"
else
  gcc $flags -o workload "$here/workload.c"
fi
best=""
for _ in 1 2 3; do
  t=$(./workload | sed -n 's/^seconds: //p')
  if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
done
echo "seconds: $best"
