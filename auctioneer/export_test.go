package auctioneer

import "github.com/updatable-lrps/bbs/db"

// Usage is what the auctioneer believes each cell holds, for tests to hold against a full
// recompute.
func (a *Auctioneer) Usage() map[string]db.CellUsage { return a.usage.byCell }
