#!/bin/bash
# bench engine, the parallel weight read (A: the working tree) against the commit before (B), alternating.
out=${OUT:-.}
for pair in 1 2; do
  for side in A B; do
    tree=${A_TREE:?a checkout of the change}; [ $side = B ] && tree=${B_TREE:?a checkout of the commit before}
    sleep 10
    echo "$(date -u +%H:%M:%S) $side$pair start" >> $out/runs.txt
    (cd $tree && node bin/iwibench.js bench engine > $out/engine-$side-$pair.json 2>/dev/null)
    echo "$(date -u +%H:%M:%S) $side$pair end" >> $out/runs.txt
  done
done
