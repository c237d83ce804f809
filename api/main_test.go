package api_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
)

// TestMain starts (once) the throwaway PostgreSQL that dbtest.NewStore clones databases from,
// and stops it when the package's tests are done.
func TestMain(m *testing.M) { dbtest.Main(m) }
