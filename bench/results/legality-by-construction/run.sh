#!/bin/bash
# run.sh OPT OUTDIR: dscc-opt --default-pipeline --fusion-remarks over every program and every .dsc input.
OPT=$1; OUT=$2; mkdir -p $OUT
ls /tmp/plan/progs/*.dsc /work/main/bench/workloads/*.dsc /work/main/bench/programs/*.dsc /work/main/test/passes/inputs/*.dsc /work/main/test/passes/*.dsc 2>/dev/null | \
  xargs -P 2 -I{} sh -c 'f={}; n=$(echo $f | tr / _); timeout 300 '$OPT' $f --default-pipeline --fusion-remarks > '$OUT'/$n.out 2>&1; echo "rc=$?" >> '$OUT'/$n.out'
