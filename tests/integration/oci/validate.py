# Validate an OCI config.json against the runtime-spec JSON schema (Debian:
# golang-github-opencontainers-specs-dev ships it; python3-jsonschema validates, offline).
# Usage: validate.py CONFIG [SCHEMA_DIR]; prints one line per error, exits 1 on any.
import json, sys, pathlib, jsonschema
d = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else
                 "/usr/share/gocode/src/github.com/opencontainers/runtime-spec/schema")
schema = json.loads((d / "config-schema.json").read_text())
resolver = jsonschema.RefResolver(base_uri=d.as_uri() + "/", referrer=schema)
cls = jsonschema.validators.validator_for(schema)
v = cls(schema, resolver=resolver)
doc = json.load(open(sys.argv[1]))
errs = sorted(v.iter_errors(doc), key=lambda e: list(e.path))
for e in errs: print("/".join(map(str, e.path)), e.message[:200])
sys.exit(1 if errs else 0)
