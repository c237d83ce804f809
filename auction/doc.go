// Package auction decides where a batch of LRP instances should start, the way Diego's
// auctioneer does (seed 003, "Distributing ActualLRPs: Auctioneer" and "Managing
// Availability Zones"). Place is a pure function: it does no I/O and, for the same cells and
// work, always returns the same result whatever order the cells were given in.
//
// # Batch order
//
// Work is placed one item at a time, lower index first, then larger memory first, then by
// process guid and definition id (then domain and disk, and finally input order, so that even
// duplicates are handled the same way every time). Low indices go first so that, when the
// cells run out of room, an LRP keeps its first instances; large items go before small ones
// so that they still find a cell with room. Each placement immediately counts toward its
// cell's usage, its starting count and its instances of the process guid, so later items in
// the same batch see it and the batch spreads out.
//
// # Fit
//
// A cell fits an item when its remaining memory and disk are at least the item's and it has
// room for one more container; what the cell holds is the sum of its Instances plus what
// this batch has put there. Placement tags follow Diego (rep's CellState.MatchPlacementTags):
// a cell's tags are its required tags, and model.CellPresence has no optional ones, so a cell
// fits only work whose set of tags equals the cell's set (duplicates and order ignored).
// Every tag the work requires must be on the cell, and a cell with a tag the work did not
// ask for is kept for work that asks for it, which is how isolation segments keep ordinary
// LRPs off dedicated cells. Untagged work therefore only lands on untagged cells.
//
// # Score
//
// Among fitting cells the lowest score wins, ties going to the smallest cell id:
//
//	score = (memFrac + diskFrac + containerFrac) / 3   // fractions in use after placing
//	      + 0.25 × instances the cell is starting       // CLAIMED, not yet RUNNING
//	      + 1000 × instances of the process guid already on the cell
//
// A capacity of zero counts as fully free when nothing is used from it (so a cell declaring
// no disk can still take diskless work); zero containers fit nothing.
//
// # Zones
//
// Zones are the distinct Zone values of the given cells, sorted by name; NZones is their
// number. Seed 003 prefers zone (f(guid) + index) % NZones for an instance, while BBS tries
// zones in order of fewest instances of the process guid. A fixed hash alone can pile
// instances into one zone when earlier ones had to fall back or were placed by an older
// batch, so Place combines the two with the load first and the hash as tie-breaker:
//
//  1. Candidate zones are those holding at least one cell whose tags match the work. If
//     there are none, the work fails with a "found no compatible cell ..." reason.
//  2. Candidate zones are ordered by the number of instances of the work's process guid they
//     hold now (every definition and state on their cells, plus this batch's placements),
//     fewest first; zones with equal counts are ordered by their distance (z - p) mod NZones
//     from p = (f(guid) + index) mod NZones, where z is a zone's position in the sorted zone
//     list and f is the 32-bit FNV-1a hash of the process guid. Free capacity plays no part
//     in this order.
//  3. The preferred zone is the first zone of that order. On a fresh LRP placed in one batch
//     this is exactly seed 003's (f(guid) + index) % NZones, instance after instance
//     going round the zones. Once instances exist the least-loaded zone wins, so a placement
//     never widens the gap between an LRP's zones, except when an index 0 or 1 instance
//     falls back (rule 4).
//  4. An instance with index 0 or 1 takes the best cell of its preferred zone and, when no
//     cell there fits, the best cell of the first zone in the order that has one. It fails
//     with model.PlacementErrorInsufficientResources only when no candidate cell fits.
//  5. An instance with index greater than 1 is placed only in its preferred zone. When no
//     cell there fits it fails with "insufficient resources in zone <zone>" and is retried by
//     a later auction, rather than crowding a zone that already has more of its instances.
//
// Both resource reasons begin with model.PlacementErrorInsufficientResources, so callers can
// tell them from a tag mismatch with strings.HasPrefix.
package auction
