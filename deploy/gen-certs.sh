#!/usr/bin/env bash
# Generate a local CA plus server and client certificates for the mutual-TLS
# listeners of the compose stack and of `make cluster` (bbs api, lb, cells and the
# Temporal frontend). `bbs cluster` runs this script (embedded in the binary,
# package deploy) into its state directory, .cluster/certs.
#
# Usage: deploy/gen-certs.sh [OUT_DIR]     (default: deploy/certs next to this script)
#        FORCE=1 deploy/gen-certs.sh       regenerate even if OUT_DIR/ca.crt exists
#
# Writes ca.crt ca.key server.crt server.key client.crt client.key, all
# RSA 2048, valid for 825 days. The server certificate covers the names of the
# compose services that listen (api-1, api-2, lb, cell-1, cell-2, cell-3,
# temporal; worker-1, worker-2 and router for their metrics) and localhost and 127.0.0.1 (`make cluster`), and is also usable as
# a client certificate (the Temporal server's services call one another with it).
#
# The leaf keys are written world-readable (LEAF_KEY_MODE, default 0644) so the
# non-root user inside the containers can read the bind-mounted files (`bbs
# cluster` sets 0600: its processes run as the user who starts it); the CA
# key stays 0600 and is never mounted into a container. These are certificates
# for a local/test stack: use a real PKI and secret store for anything else.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-"$script_dir/certs"}
days=825
leaf_key_mode=${LEAF_KEY_MODE:-0644}

if [[ -e "$out/ca.crt" && "${FORCE:-0}" != 1 ]]; then
  echo "gen-certs: $out/ca.crt already exists; leaving certificates as they are (FORCE=1 to regenerate)"
  exit 0
fi

command -v openssl >/dev/null || { echo "gen-certs: openssl not found" >&2; exit 1; }

# Build everything in a scratch dir and move it into place at the end, so an
# interrupted run never leaves a half-written set behind.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 077

# RSA: the BBS protocol's clients offer only ECDHE-RSA suites under TLS 1.2.
genkey() { openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null; }
serial() { echo "0x$(openssl rand -hex 16)"; }

# CA
genkey "$work/ca.key"
openssl req -x509 -new -sha256 -days "$days" \
  -key "$work/ca.key" \
  -subj "/O=bbs/CN=bbs local CA" \
  -set_serial "$(serial)" \
  -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -addext "subjectKeyIdentifier=hash" \
  -out "$work/ca.crt"

# sign NAME CN EXTENDED_KEY_USAGE [SUBJECT_ALT_NAME]
sign() {
  local name=$1 cn=$2 eku=$3 san=${4:-}
  genkey "$work/$name.key"
  openssl req -new -sha256 -key "$work/$name.key" -subj "/O=bbs/CN=$cn" -out "$work/$name.csr"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$eku"
    echo "subjectKeyIdentifier=hash"
    echo "authorityKeyIdentifier=keyid,issuer"
    if [[ -n "$san" ]]; then echo "subjectAltName=$san"; fi
  } >"$work/$name.ext"
  openssl x509 -req -sha256 -days "$days" \
    -in "$work/$name.csr" \
    -CA "$work/ca.crt" -CAkey "$work/ca.key" -set_serial "$(serial)" \
    -extfile "$work/$name.ext" \
    -out "$work/$name.crt" 2>/dev/null
}

sign server api "serverAuth,clientAuth" \
  "DNS:api-1,DNS:api-2,DNS:lb,DNS:cell-1,DNS:cell-2,DNS:cell-3,DNS:temporal,DNS:worker-1,DNS:worker-2,DNS:router,DNS:localhost,IP:127.0.0.1"
sign client bbs-client "clientAuth"

openssl verify -CAfile "$work/ca.crt" "$work/server.crt" "$work/client.crt" >/dev/null

chmod 0644 "$work/ca.crt" "$work/server.crt" "$work/client.crt"
chmod 0600 "$work/ca.key"
chmod "$leaf_key_mode" "$work/server.key" "$work/client.key"

mkdir -p "$out"
# ca.crt last: its presence is what a later run takes for a whole set, so an interrupted move
# leaves it absent and the next run writes the set again.
for f in ca.key server.crt server.key client.crt client.key ca.crt; do
  mv -f "$work/$f" "$out/$f"
done
echo "gen-certs: wrote CA, server and client certificates to $out"
