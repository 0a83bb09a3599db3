#!/bin/bash
# det.sh DSCC MODEL N: compiles MODEL N times with the zoo's ranges, prints each library's sha256 and its run-time check count.
D=$1; M=$2; N=$3; shift 3
for i in $(seq $N); do mkdir -p /tmp/probe/det/$i
  $D compile $M -o /tmp/probe/det/$i/model.so -j 1 --no-cache "$@" 2>/dev/null
  $D compile $M --emit=fused-ir -o /tmp/probe/det.$i.ir -j 1 --no-cache "$@" 2>/dev/null
  echo "so=$(sha256sum < /tmp/probe/det/$i/model.so | cut -c1-12) ir=$(sha256sum < /tmp/probe/det.$i.ir | cut -c1-12) checks=$(grep -c ' = check\|^ *check ' /tmp/probe/det.$i.ir)"
done
