# SPDX-License-Identifier: BSD-3-Clause
# promparse.py: reads the Prometheus text format on stdin with the
# Prometheus client library's own parser (Debian's python3-prometheus-client,
# run by /usr/bin/python3) and prints what it understood, one line each,
# tab-separated, for the shell tests to check:
#   TYPE <family> <type>
#   <sample> <kind label or -> <name label as JSON, or -> <value>
# Exits 1 (with the reason on stderr) when the input is not valid UTF-8,
# does not parse, or gives a family twice (its samples were not together).
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

try:
    text = sys.stdin.buffer.read().decode("utf-8")
    seen = set()
    for fam in text_string_to_metric_families(text):
        if fam.name in seen:
            raise ValueError("family %s given twice" % fam.name)
        seen.add(fam.name)
        print("TYPE\t%s\t%s" % (fam.name, fam.type))
        for s in fam.samples:
            name = json.dumps(s.labels["name"]) if "name" in s.labels else "-"
            print("%s\t%s\t%s\t%r" % (s.name, s.labels.get("kind", "-"), name, s.value))
except Exception as e:  # noqa: BLE001 - any failure is the test's finding
    print("promparse: %s: %s" % (type(e).__name__, e), file=sys.stderr)
    sys.exit(1)
