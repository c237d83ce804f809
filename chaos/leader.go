package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/updatable-lrps/bbs/auctioneer"
	"github.com/updatable-lrps/bbs/db"
)

// placementLeader is the worker whose database session holds the placement lock. PostgreSQL
// knows the session's client port; the worker is the process with a socket on that port.
func placementLeader(ctx context.Context, c *Cluster, _ []string) (string, error) {
	var port int
	err := retry(ctx, func(ctx context.Context) error {
		return c.DB().QueryRowContext(ctx, `SELECT a.client_port FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND ((l.classid::bigint << 32) | l.objid::bigint) = $1`,
			db.LeaderLockKey(auctioneer.LeaderLock)).Scan(&port)
	})
	if err != nil {
		return "", fmt.Errorf("the placement lock's session: %w", err)
	}
	inode, err := socketInode(port, c.Ports.PG)
	if err != nil {
		return "", err
	}
	for i := 1; ; i++ {
		name := fmt.Sprintf("worker-%d", i)
		pid, err := c.PID(name)
		if err != nil {
			return "", fmt.Errorf("no worker has the socket of the placement lock's session (port %d): %w", port, err)
		}
		if hasSocket(pid, inode) {
			return name, nil
		}
	}
}

// socketInode finds the inode of the loopback TCP connection from local port to remote port
// in /proc/net/tcp.
func socketInode(local, remote int) (string, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", local)
	peer := fmt.Sprintf(":%04X", remote)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) >= 10 && strings.HasSuffix(fields[1], want) && strings.HasSuffix(fields[2], peer) {
			return fields[9], nil
		}
	}
	return "", fmt.Errorf("no TCP connection from port %d to %d", local, remote)
}

// hasSocket reports whether process pid holds the socket with inode.
func hasSocket(pid int, inode string) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := "socket:[" + inode + "]"
	for _, e := range entries {
		if link, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && link == want {
			return true
		}
	}
	return false
}
