package pgcluster

import (
	"context"
	"database/sql"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/testwait"

	_ "github.com/lib/pq"
)

// needBinaries skips tests that need a real server when none is installed,
// since that is a property of the machine, not a bug in this package.
func needBinaries(t *testing.T) {
	t.Helper()
	if _, err := FindBinDir(); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
}

func startCluster(t *testing.T, dataDir string) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{DataDir: dataDir, Ephemeral: true})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop in cleanup: %v", err)
		}
	})
	return c
}

func openDB(t *testing.T, c *Cluster, name string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", c.URL(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestLifecycleKeepsData(t *testing.T) {
	needBinaries(t)
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "pg")

	c := startCluster(t, dataDir)
	if c.Port() <= 0 {
		t.Fatalf("Port() = %d", c.Port())
	}
	want := "postgres://postgres@127.0.0.1:" + strconv.Itoa(c.Port()) + "/app?sslmode=disable"
	if got := c.URL("app"); got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
	for i := 0; i < 2; i++ {
		if err := c.CreateDatabase(ctx, "app"); err != nil {
			t.Fatalf("CreateDatabase #%d: %v", i+1, err)
		}
	}
	for _, bad := range []string{"", "App", "1app", `a"; DROP DATABASE postgres; --`} {
		if err := c.CreateDatabase(ctx, bad); err == nil {
			t.Errorf("CreateDatabase(%q) succeeded, want a validation error", bad)
		}
	}
	db := openDB(t, c, "app")
	if _, err := db.ExecContext(ctx, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postmaster.pid still present after Stop (err=%v)", err)
	}
	if pid, alive := liveServer(dataDir, 0); alive {
		t.Fatalf("postgres pid %d still running after Stop", pid)
	}

	c2 := startCluster(t, dataDir)
	if err := c2.CreateDatabase(ctx, "app"); err != nil {
		t.Fatalf("CreateDatabase after restart: %v", err)
	}
	var v string
	if err := openDB(t, c2, "app").QueryRowContext(ctx, "SELECT v FROM kept").Scan(&v); err != nil {
		t.Fatalf("reading data written before the restart: %v", err)
	}
	if v != "hello" {
		t.Fatalf("got %q, want hello", v)
	}
}

func TestRefusesSecondServerOnSameDataDir(t *testing.T) {
	needBinaries(t)
	dataDir := filepath.Join(t.TempDir(), "pg")
	c := startCluster(t, dataDir)
	pid := readPID(filepath.Join(dataDir, "postmaster.pid"))

	_, err := Start(context.Background(), Config{DataDir: dataDir, Ephemeral: true})
	if err == nil || !strings.Contains(err.Error(), "already running") || !strings.Contains(err.Error(), strconv.Itoa(pid)) {
		t.Fatalf("second Start: got %v, want an 'already running' error naming pid %d", err, pid)
	}
	// The failed Start must not have disturbed the first server.
	var one int
	if err := openDB(t, c, "postgres").QueryRow("SELECT 1").Scan(&one); err != nil {
		t.Fatalf("first server broken by second Start: %v", err)
	}
}

func TestRecoversAfterCrash(t *testing.T) {
	needBinaries(t)
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "pg")
	c := startCluster(t, dataDir)
	if _, err := openDB(t, c, "postgres").ExecContext(ctx,
		// Ephemeral tuning turns synchronous_commit off, which could lose this
		// commit to the SIGKILL below; durability is not what we test here.
		"SET synchronous_commit = on; CREATE TABLE survived (id int)"); err != nil {
		t.Fatal(err)
	}

	// Simulate a crash: kill the whole server without letting it clean up,
	// leaving postmaster.pid behind.
	pidFile := filepath.Join(dataDir, "postmaster.pid")
	if err := syscall.Kill(-readPID(pidFile), syscall.SIGKILL); err != nil {
		t.Fatalf("killing the server: %v", err)
	}
	testwait.Until(t, 10*time.Second, 50*time.Millisecond, "the server processes to die after SIGKILL", func() bool {
		_, alive := liveServer(dataDir, 0)
		return !alive
	})
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("expected a stale postmaster.pid: %v", err)
	}
	// Stopping a server that has crashed is not an error: nothing is left.
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop after crash: %v", err)
	}
	if _, err := os.Stat(pidFile); err != nil {
		t.Fatalf("Stop removed the stale postmaster.pid, so the restart below tests nothing: %v", err)
	}

	c2 := startCluster(t, dataDir)
	var n int
	if err := openDB(t, c2, "postgres").QueryRowContext(ctx, "SELECT count(*) FROM survived").Scan(&n); err != nil {
		t.Fatalf("after crash recovery: %v", err)
	}
}

func TestBadBinDir(t *testing.T) {
	binDir := filepath.Join(t.TempDir(), "no-such-bin")
	_, err := Start(context.Background(), Config{DataDir: filepath.Join(t.TempDir(), "pg"), BinDir: binDir})
	if err == nil {
		t.Fatal("Start with a bad BinDir succeeded")
	}
	for _, want := range []string{binDir, "initdb"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestBadPGBinDirEnv(t *testing.T) {
	t.Setenv("PG_BINDIR", "/nonexistent/pg/bin")
	_, err := FindBinDir()
	if err == nil || !strings.Contains(err.Error(), "PG_BINDIR") || !strings.Contains(err.Error(), "/nonexistent/pg/bin") {
		t.Fatalf("FindBinDir with a bad PG_BINDIR: got %v", err)
	}
}

func TestStartFailureShowsServerLog(t *testing.T) {
	needBinaries(t)
	// Occupy a port so that postgres cannot bind it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dataDir := filepath.Join(t.TempDir(), "pg")
	_, err = Start(context.Background(), Config{DataDir: dataDir, Port: l.Addr().(*net.TCPAddr).Port, Ephemeral: true})
	if err == nil {
		t.Fatal("Start on a busy port succeeded")
	}
	if !strings.Contains(err.Error(), "last lines of") || !strings.Contains(err.Error(), "could not") {
		t.Errorf("error lacks the server log tail: %v", err)
	}
	if pid, alive := liveServer(dataDir, 0); alive {
		t.Errorf("failed Start left postgres pid %d running", pid)
	}
}

// A killed postmaster is noticed (Done, with Err naming it), and Start on the same data
// directory brings the cluster back once the backends have followed their postmaster (the
// stale postmaster.pid is cleared); Stop closes Done without an error.
func TestDoneWhenThePostmasterDies(t *testing.T) {
	needBinaries(t)
	dataDir := filepath.Join(t.TempDir(), "pg")
	c := startCluster(t, dataDir)
	if pid := readPID(filepath.Join(dataDir, "postmaster.pid")); c.PID() != pid || pid == 0 {
		t.Fatalf("PID() = %d, postmaster.pid says %d", c.PID(), pid)
	}
	db := openDB(t, c, "postgres")
	if err := db.Ping(); err != nil { // a backend that outlives the postmaster for a moment
		t.Fatal(err)
	}
	select {
	case <-c.Done():
		t.Fatal("Done is closed while the server runs")
	case <-time.After(2 * watchInterval):
	}
	if err := syscall.Kill(c.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the postmaster's death went unnoticed")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), strconv.Itoa(c.PID())) {
		t.Fatalf("Err() = %v, want it to name the postmaster", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var again *Cluster
	testwait.Until(t, time.Minute, 200*time.Millisecond, "the cluster to start again on its data directory", func() bool {
		var err error
		again, err = Start(ctx, Config{DataDir: dataDir, Ephemeral: true})
		return err == nil
	})
	if again.PID() == c.PID() {
		t.Fatal("the same postmaster?")
	}
	if err := again.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-again.Done():
		if again.Err() != nil {
			t.Fatalf("Err() after Stop = %v", again.Err())
		}
	default:
		t.Fatal("Stop did not close Done")
	}
}
