#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nemesis-outcomes.sh: what each kind of fault did to the calls, from the
# histories that tools/nemesis.sh -k keeps (DIR/seed-N/history.txt).  For
# every fault, the calls that returned from its start until a lease after
# its end: ENOLCK and EIO from unlocks, EIO and ETIMEDOUT from lock calls of
# the client it hit (every client, for a fault of the server or of the
# network as a whole), and EOWNERDEAD from anyone.  Faults that overlap
# share their calls, so a call may count for several.  Prints one line per
# kind: faults, then the counts, also per fault.
#
#   bash tools/nemesis-outcomes.sh build/nemesis-runs [LEASE_MS (3000)]
set -euo pipefail
dir=${1:?usage: nemesis-outcomes.sh DIR [LEASE_MS]}
lease=${2:-3000}
for h in "$dir"/seed-*/history.txt; do
  awk -v L="$lease" '
    / FAULT / {
      n++; t0[n] = $1 + 0; kind[n] = $4; pid[n] = $6;
      t1[n] = t0[n];
      for (i = 7; i <= NF; i++) if ($i == "until") t1[n] = $(i + 1) + 0;
      next
    }
    $5 == "lock" || $5 == "trylock" || $5 == "timedlock" || $5 == "unlock" {
      split($3, pt, "/"); c++; cp[c] = pt[1]; op[c] = $5; rc[c] = $(NF - 2); tr[c] = $NF + 0;
    }
    END {
      for (f = 1; f <= n; f++) {
        k = kind[f]; cnt[k]++;
        for (j = 1; j <= c; j++) {
          if (tr[j] < t0[f] || tr[j] > t1[f] + L) continue;
          mine = pid[f] == 0 || cp[j] == pid[f];
          if (rc[j] == "EOWNERDEAD") od[k]++;
          else if (!mine) continue;
          else if (op[j] == "unlock" && rc[j] == "ENOLCK") nolck[k]++;
          else if (op[j] == "unlock" && rc[j] == "EIO") ueio[k]++;
          else if (op[j] != "unlock" && rc[j] == "EIO") leio[k]++;
          else if (rc[j] == "ETIMEDOUT") tmo[k]++;
        }
      }
      for (k in cnt) printf "%s %d %d %d %d %d %d\n", k, cnt[k], nolck[k], od[k], leio[k], ueio[k], tmo[k];
    }' "$h"
done | sort | awk '
  BEGIN {
    printf "%-12s %6s %8s %11s %9s %11s %10s   (per fault)\n", "fault", "faults", "ENOLCK",
           "EOWNERDEAD", "lock EIO", "unlock EIO", "ETIMEDOUT";
  }
  { n[$1] += $2; a[$1] += $3; b[$1] += $4; e[$1] += $5; u[$1] += $6; t[$1] += $7 }
  END {
    for (k in n)
      printf "%-12s %6d %8d %11d %9d %11d %10d   %.1f %.1f %.1f %.1f %.1f\n", k, n[k], a[k], b[k],
             e[k], u[k], t[k], a[k] / n[k], b[k] / n[k], e[k] / n[k], u[k] / n[k], t[k] / n[k] | "sort";
  }' 
