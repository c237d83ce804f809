package boot

import (
	"context"
	"crypto/tls"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/protocol"
)

// StartAPI listens on addr, and on protocolAddr unless it is empty (with serverTLS, which
// system.Listen requires beyond loopback), and starts the API of cfg there: `bbs api` and
// the dev stack serve the API the same way.
func StartAPI(ctx context.Context, store *db.Store, addr, protocolAddr string, serverTLS *tls.Config, cfg system.APIConfig) (*system.API, error) {
	ln, scheme, err := system.Listen(addr, serverTLS)
	if err != nil {
		return nil, err
	}
	cfg.Store, cfg.Listener, cfg.Scheme = store, ln, scheme
	if protocolAddr != "" {
		if cfg.ProtocolListener, cfg.ProtocolScheme, err = system.Listen(protocolAddr, protocol.TLSConfig(serverTLS)); err != nil {
			ln.Close()
			return nil, err
		}
	}
	return system.StartAPI(ctx, cfg)
}
