package auctioneer

import (
	"time"

	"github.com/updatable-lrps/bbs/auction"
	"github.com/updatable-lrps/bbs/db"
)

// fleetUsage is what each cell holds, as placement knows it between full reads: summing the
// whole fleet costs PostgreSQL an aggregate over every instance (a quarter of a million at
// Diego's scale), and a round placing ten instances must not pay that. So the sums are read
// in full now and then (Options.Resync) and, in between, kept up to date from what this
// auctioneer hands out (added when sent, taken back when a cell refuses or cannot claim).
//
// What it misses until the next full read only makes cells look fuller than they are:
// instances and tasks that stop or crash free capacity, and CLAIMED instances that start
// stop counting as starting. Work that reaches a cell without placement (a cell reporting
// an instance the store did not know) is the exception, and the cell's own admission check
// refuses what does not fit, so no decision exceeds a cell's capacity.
type fleetUsage struct {
	byCell map[string]db.CellUsage
	// read is when the sums were read in full; zero when they must be read before the next
	// round (never read, leadership regained, or work did not fit on what they say).
	read time.Time
}

// due says whether the sums must be read in full before a round at now.
func (u *fleetUsage) due(now time.Time, every time.Duration) bool {
	return u.read.IsZero() || now.Sub(u.read) >= every
}

// reset replaces the sums with a full read made at read.
func (u *fleetUsage) reset(byCell map[string]db.CellUsage, read time.Time) {
	u.byCell, u.read = byCell, read
}

// invalidate makes the next round read the sums in full.
func (u *fleetUsage) invalidate() { u.read = time.Time{} }

// add counts work handed to a cell (n = 1) or taken back (n = -1).
func (u *fleetUsage) add(cellID string, w auction.Work, n int) {
	if u.byCell == nil {
		u.byCell = map[string]db.CellUsage{}
	}
	c := u.byCell[cellID]
	c.MemoryMB += int64(n) * int64(w.MemoryMB)
	c.DiskMB += int64(n) * int64(w.DiskMB)
	c.Containers += n
	if w.TaskGUID == "" {
		c.Starting += n
	}
	u.byCell[cellID] = c
}

// held is what a cell holds besides listed (its instances of the LRPs being placed), never
// below zero: an instance listed that the sums do not count yet must not make the cell look
// emptier than the sums say.
func (u *fleetUsage) held(cellID string, listed []db.HeldInstance) auction.Usage {
	h := u.byCell[cellID].Less(listed)
	return auction.Usage{
		MemoryMB: max(h.MemoryMB, 0), DiskMB: max(h.DiskMB, 0),
		Containers: max(h.Containers, 0), Starting: max(h.Starting, 0),
	}
}
