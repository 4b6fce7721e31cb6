#!/usr/bin/env bash
# mkca.sh DIR NAME...: a test CA (DIR/ca.pem, DIR/ca.key) and one leaf per NAME
# (DIR/NAME.pem, DIR/NAME.key), with the name as its subjectAltName. openssl only.
set -eu
dir=$1
shift
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
	-subj "/CN=agentrun test origin CA" -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
for n in "$@"; do
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$n" \
		-keyout "$dir/$n.key" -out "$dir/$n.csr" 2>/dev/null
	printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$n" >"$dir/$n.ext"
	openssl x509 -req -in "$dir/$n.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
		-CAcreateserial -days 2 -extfile "$dir/$n.ext" -out "$dir/$n.pem" 2>/dev/null
done
