// Package deploy holds what deploys the BBS beside its binary: the compose stack's
// configuration and deploy/gen-certs.sh, the one generator of the mutual-TLS certificates.
// The script is embedded so that `bbs cluster` makes its certificates with it from
// wherever the binary runs, rather than with a second generator that could drift.
package deploy

import _ "embed"

// GenCertsScript is gen-certs.sh: bash GEN-CERTS OUT_DIR writes ca.crt, server.crt,
// client.crt and their keys into OUT_DIR unless OUT_DIR/ca.crt exists.
//
//go:embed gen-certs.sh
var GenCertsScript []byte
