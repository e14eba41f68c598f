#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
# metrics_parse.py FILE - reads a metrics file (DISTLOCK_METRICS_FILE) with
# the Prometheus client library's own text-format parser, which raises on
# any line the format does not allow, and prints one sample a line:
#   SAMPLE<TAB>name-label<TAB>value
# (name-label "-" for samples without one; histogram buckets as
# SAMPLE:le).  Exit status 1, with the parser's complaint, if the file is
# not valid; 2 if the parser is not installed (tools/deps.sh --test).
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as e:
    print("metrics_parse.py: %s (python3-prometheus-client)" % e, file=sys.stderr)
    sys.exit(2)

with open(sys.argv[1], encoding="utf-8") as f:
    text = f.read()
try:
    for fam in text_string_to_metric_families(text):
        if fam.type not in ("counter", "gauge", "histogram"):
            raise ValueError("family %s has type %s" % (fam.name, fam.type))
        for s in fam.samples:
            name = s.name
            if "le" in s.labels:
                name += ":" + s.labels["le"]
            print("%s\t%s\t%r" % (name, s.labels.get("name", "-"), float(s.value)))
except Exception as e:  # the parser raises ValueError and others
    print("metrics_parse.py: not valid: %s" % e, file=sys.stderr)
    sys.exit(1)
