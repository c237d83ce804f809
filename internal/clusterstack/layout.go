package clusterstack

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// layout is where the cluster's processes listen and the environment each is configured
// by: every bbs process calls its peers with the client certificate, those that listen
// require one, and each serves its metrics on a plain-HTTP listener of its own
// (docs/METRICS.md), since the replicas' and the cells' listeners require a client
// certificate.
type layout struct {
	cfg          Config
	dir          string // cfg.DataDir, absolute
	certs        clusterCerts
	dbURL        string // set once PostgreSQL is up
	temporalAddr string // set once the Temporal server is up
	namespace    string
}

// common is every bbs process's environment.
func (l layout) common() map[string]string {
	return merge(map[string]string{"BBS_LOG_LEVEL": l.cfg.LogLevel}, l.certs.peerEnv())
}

// listening is the environment of a bbs process that listens.
func (l layout) listening() map[string]string { return merge(l.common(), l.certs.serverEnv()) }

// withTemporal is what a client of the store and the Temporal frontend needs.
func (l layout) withTemporal() map[string]string {
	return merge(map[string]string{"DATABASE_URL": l.dbURL, "TEMPORAL_ADDRESS": l.temporalAddr, "TEMPORAL_NAMESPACE": l.namespace},
		l.certs.temporalEnv())
}

// metricsAt serves a process's metrics on a loopback port of its own.
func metricsAt(port int) map[string]string {
	return map[string]string{"BBS_METRICS_LISTEN_ADDR": fmt.Sprintf("127.0.0.1:%d", port)}
}

// apiAddrs are API replica i's (1-based) JSON and BBS-protocol addresses.
func (l layout) apiAddrs(i int) (json, protocol string) {
	base := l.cfg.PortBase + 10*(i-1)
	return fmt.Sprintf("127.0.0.1:%d", base+1), fmt.Sprintf("127.0.0.1:%d", base+2)
}

// apiEnv configures API replica i.
func (l layout) apiEnv(i int) map[string]string {
	addr, paddr := l.apiAddrs(i)
	return merge(l.listening(), l.withTemporal(), metricsAt(l.cfg.MetricsPortBase+20+i), map[string]string{
		"BBS_LISTEN_ADDR": addr, "BBS_PROTOCOL_LISTEN_ADDR": paddr})
}

// lbEnv configures the front of the replicas.
func (l layout) lbEnv() map[string]string {
	var api, protocol []string
	for i := 1; i <= l.cfg.APIReplicas; i++ {
		a, p := l.apiAddrs(i)
		api, protocol = append(api, a), append(protocol, p)
	}
	return merge(l.listening(), metricsAt(l.cfg.MetricsPortBase), map[string]string{
		"BBS_LB_LISTEN_ADDR": l.cfg.Listen, "BBS_LB_BACKENDS": strings.Join(api, ","),
		"BBS_LB_PROTOCOL_LISTEN_ADDR": l.cfg.ProtocolListen, "BBS_LB_PROTOCOL_BACKENDS": strings.Join(protocol, ","),
	})
}

// frontURL is where the API's front is, for its clients and the banner.
func (l layout) frontURL() string { return "https://" + l.cfg.Listen }

// workerEnv configures worker i.
func (l layout) workerEnv(i int) map[string]string {
	env := merge(l.common(), l.withTemporal(), metricsAt(l.cfg.MetricsPortBase+i))
	if l.cfg.ConvergenceInterval > 0 {
		env["BBS_CONVERGENCE_INTERVAL"] = l.cfg.ConvergenceInterval.String()
	}
	return env
}

// routerEnv configures the router, which follows the routes through the front.
func (l layout) routerEnv() map[string]string {
	return merge(l.common(), map[string]string{
		"BBS_ROUTER_LISTEN_ADDR": l.cfg.RouterAddr, "BBS_ROUTER_ADMIN_ADDR": l.cfg.RouterAdminAddr, "BBS_API_URL": l.frontURL(),
	})
}

// cellID is cell i's id and zone (round robin over the zones).
func (l layout) cellID(i int) (id, zone string) {
	return fmt.Sprintf("cell-%d", i), fmt.Sprintf("z%d", (i-1)%l.cfg.Zones+1)
}

// cellWorkDir is where cell i's instances get their directories.
func (l layout) cellWorkDir(i int) string {
	id, _ := l.cellID(i)
	return filepath.Join(l.dir, "cells", id)
}

// cellEnv configures cell i, with a thousand host ports of its own.
func (l layout) cellEnv(i int) map[string]string {
	id, zone := l.cellID(i)
	first := l.cfg.InstancePortBase + (i-1)*1000
	env := merge(l.listening(), metricsAt(l.cfg.MetricsPortBase+10+i), map[string]string{
		"BBS_CELL_ID": id, "BBS_CELL_ZONE": zone, "BBS_API_URL": l.frontURL(), "BBS_CELL_EXECUTOR": l.cfg.CellExecutor,
		"BBS_CELL_WORK_DIR": l.cellWorkDir(i), "BBS_CELL_PORT_RANGE": fmt.Sprintf("%d-%d", first, first+999),
	})
	for name, v := range map[string]int{"BBS_CELL_MEMORY_MB": l.cfg.CellMemoryMB, "BBS_CELL_DISK_MB": l.cfg.CellDiskMB,
		"BBS_CELL_CONTAINERS": l.cfg.CellContainers} {
		if v > 0 {
			env[name] = strconv.Itoa(v)
		}
	}
	return env
}

// merge is the union of maps, a later one's value winning.
func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
