package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }
