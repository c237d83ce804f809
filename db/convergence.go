package db

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// Convergence (seed 003, "Harmonizing DesiredLRPs with Actual LRPs: Converger"): every step is
// one set-based statement, or two, over the whole store, because a pass must stay short at
// 250,000 instances. Each step is its own transaction with its events, so a pass holds row
// locks briefly and a failed step leaves the earlier ones done; every step is idempotent, so
// the next pass (or a Temporal retry) finishes the work.

// ConvergeOptions tune a convergence pass; the zero value is BBS's behaviour.
type ConvergeOptions struct {
	// RestartPolicy decides which CRASHED instances restart; nil means the store's policy
	// (model.DefaultRestartPolicy unless SetRestartPolicy changed it), the one cells' crash
	// reports use, so that both sides agree.
	RestartPolicy *model.RestartPolicy
	// StaleUnclaimed is how long an instance may stay UNCLAIMED before it counts as stale;
	// 0 means 30 s (ARCHITECTURE.md).
	StaleUnclaimed time.Duration
	// RetiredHistory is how many retired definitions each LRP keeps for rollback; 0 means 10
	// (API.md, like Kubernetes' revisionHistoryLimit).
	RetiredHistory int
	// EventRetention is how long events stay in the log; 0 means DefaultEventRetention.
	// EventsKept is the most events it keeps, the newest; 0 means DefaultEventsKept. Each
	// pass prunes what is beyond either (PruneEvents): nothing else would, and the log
	// grows with every change.
	EventRetention time.Duration
	EventsKept     int
}

// ConvergeResult says what a pass changed, step by step.
type ConvergeResult struct {
	// MissingCells are the cells without a fresh presence that instances are still recorded
	// on (Diego's SuspectCells).
	MissingCells int
	// MissingCellClaims are CLAIMED instances on vanished cells made UNCLAIMED again.
	MissingCellClaims int
	// Suspected are RUNNING instances on vanished cells made SUSPECT, each with a new
	// UNCLAIMED instance placed beside it.
	Suspected int
	// SuspectsRemoved are SUSPECT instances deleted because their replacement runs.
	SuspectsRemoved int
	// MissingIndices are UNCLAIMED instances created for indices that had none.
	MissingIndices int
	// DuplicatesRemoved are records deleted, and DuplicatesToStop instances retired for their
	// cells to stop, because another ordinary instance held their index outside a rollout.
	DuplicatesRemoved, DuplicatesToStop int
	// ExtrasRemoved are records of undesired instances deleted; ExtrasToStop are undesired
	// instances left for their cells to stop and report.
	ExtrasRemoved, ExtrasToStop int
	// CrashedRestarted are CRASHED instances whose back-off passed, made UNCLAIMED.
	CrashedRestarted int
	// StaleUnclaimed are UNCLAIMED instances older than StaleUnclaimed (reported only).
	StaleUnclaimed int
	// DefinitionsRetired are unused live definitions retired; DefinitionsPruned are retired
	// definitions beyond the history limit deleted.
	DefinitionsRetired, DefinitionsPruned int
	// EventsPruned are events deleted from the log.
	EventsPruned int
	// Steps are the pass's steps in order with the time each took: where a slow pass went.
	Steps []StepTime
	// ToStop are the instances cells must stop. Stop requests must be idempotent: an extra
	// instance is listed on every pass until its cell reports it stopped.
	ToStop []model.ActualLRP
}

// Converge runs one convergence pass over the whole store.
func (s *Store) Converge(ctx context.Context, opts ConvergeOptions) (*ConvergeResult, error) {
	policy := s.restartPolicy
	if opts.RestartPolicy != nil {
		policy = *opts.RestartPolicy
	}
	if opts.StaleUnclaimed < 0 || opts.RetiredHistory < 0 || opts.EventRetention < 0 || opts.EventsKept < 0 {
		return nil, model.Errorf(model.ErrInvalidRequest,
			"stale unclaimed age, retired history, event retention and events kept must not be negative")
	}
	if opts.StaleUnclaimed == 0 {
		opts.StaleUnclaimed = 30 * time.Second
	}
	if opts.RetiredHistory == 0 {
		opts.RetiredHistory = defaultRetiredHistory
	}
	if opts.EventRetention == 0 {
		opts.EventRetention = DefaultEventRetention
	}
	if opts.EventsKept == 0 {
		opts.EventsKept = DefaultEventsKept
	}
	res := &ConvergeResult{}
	// One scan finds the LRPs with extra instances, those with duplicated indices and those
	// with missing ones, for the steps that handle them (the last two under the LRPs'
	// locks). Neither removeExtras (undesired and retiring instances) nor removeDuplicates
	// changes what the others look at; reapMissingCells leaves every index held: it makes an
	// instance a suspect only beside its replacement.
	var found candidates
	// Suspects go first: a suspect whose replacement runs must be gone before that
	// replacement can itself become suspect at the same key.
	steps := []struct {
		name string
		run  func(context.Context, *ConvergeResult) error
	}{
		{"resolved suspects", s.removeResolvedSuspects},
		{"candidates and extras", func(ctx context.Context, r *ConvergeResult) (err error) {
			if found, err = s.findCandidates(ctx); err != nil {
				return err
			}
			return s.removeExtras(ctx, r, found.extra)
		}},
		{"duplicates", func(ctx context.Context, r *ConvergeResult) error {
			return s.removeDuplicates(ctx, r, found.duplicated)
		}},
		{"missing cells", s.reapMissingCells},
		{"missing indices", func(ctx context.Context, r *ConvergeResult) error {
			return s.createMissingIndices(ctx, r, found.missing)
		}},
		{"crashed", func(ctx context.Context, r *ConvergeResult) error { return s.restartCrashed(ctx, r, policy) }},
		{"stale unclaimed", func(ctx context.Context, r *ConvergeResult) error {
			return s.countStaleUnclaimed(ctx, r, opts.StaleUnclaimed)
		}},
		{"definitions", func(ctx context.Context, r *ConvergeResult) error {
			return s.pruneDefinitions(ctx, r, opts.RetiredHistory)
		}},
		{"events", func(ctx context.Context, r *ConvergeResult) (err error) {
			r.EventsPruned, err = s.PruneEvents(ctx, opts.EventRetention, opts.EventsKept)
			return err
		}},
	}
	for _, step := range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := step.run(ctx, res); err != nil {
			return nil, fmt.Errorf("converge: %s: %w", step.name, err)
		}
		res.Steps = append(res.Steps, StepTime{Step: step.name, Took: time.Since(t0)})
	}
	return res, nil
}

// StepTime is how long one step of a convergence pass took.
type StepTime struct {
	Step string
	Took time.Duration
}

// StepTimes reads the steps as "step 12ms, step 3ms, ...", for logs and benchmarks.
func (r *ConvergeResult) StepTimes() string {
	var b strings.Builder
	for i, st := range r.Steps {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", st.Step, st.Took.Round(time.Millisecond/10))
	}
	return b.String()
}

// SQL predicates on an instance aliased a.
const (
	cellFresh = `EXISTS (SELECT 1 FROM cells c WHERE c.cell_id = a.cell_id AND c.expires_at > now())`
	// Seed 002: without a fresh domain the desired state may be incomplete, so nothing of it
	// is destroyed. A domain nobody ever upserted is not fresh.
	domainFresh = `EXISTS (SELECT 1 FROM domains dm WHERE dm.name = a.domain
    AND (dm.expires_at IS NULL OR dm.expires_at > now()))`
	desired = `EXISTS (SELECT 1 FROM desired_lrps l
    WHERE l.process_guid = a.process_guid AND a.instance_index < l.instances)`
)

// removeResolvedSuspects deletes SUSPECT instances whose replacement is RUNNING and ready (its
// readiness checks, if any, pass): an ORDINARY
// instance of the same definition at the index, or of any definition once no ORDINARY
// instance of the suspect's own definition is left there (a rollout moved the index on).
// A suspect whose replacement is not RUNNING yet is kept even when its cell is back: it may
// still serve traffic (GroupActualLRPs shows it), and dropping it would leave the index
// without a running instance; it goes as soon as the replacement runs.
func (s *Store) removeResolvedSuspects(ctx context.Context, res *ConvergeResult) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		removed, err := selectActual(ctx, tx, `DELETE FROM actual_lrps a
WHERE a.presence = 'SUSPECT' AND EXISTS (SELECT 1 FROM actual_lrps o
    WHERE o.process_guid = a.process_guid AND o.instance_index = a.instance_index
      AND o.presence = 'ORDINARY' AND o.state = 'RUNNING' AND NOT o.not_ready
      AND (o.definition_id = a.definition_id OR NOT EXISTS (SELECT 1 FROM actual_lrps p
          WHERE p.process_guid = a.process_guid AND p.instance_index = a.instance_index
            AND p.definition_id = a.definition_id AND p.presence = 'ORDINARY')))
RETURNING `+actualColumns)
		if err != nil {
			return err
		}
		res.SuspectsRemoved = len(removed)
		// If their cell comes back it still runs them: it must stop them.
		res.ToStop = append(res.ToStop, removed...)
		return appendEvents(ctx, tx, instanceEvents(model.EventActualLRPRemoved, removed)...)
	})
}

// removeExtras stops instances no LRP wants (index at or beyond the count, or the LRP gone),
// only in fresh domains. UNCLAIMED and CRASHED records are deleted; CLAIMED and RUNNING ones
// are returned for their cells to stop, and go when the cells report. Records that no cell
// will ever report on — SUSPECT ones and those on vanished cells — are deleted and returned
// too, in case the cell comes back. EVACUATING instances belong to the evacuation protocol.
//
// guids are the LRPs findCandidates found with instances at undesired indices (or of no
// LRP): the common pass has none, and only theirs are read.
func (s *Store) removeExtras(ctx context.Context, res *ConvergeResult, guids []string) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var removed, running []model.ActualLRP
		if len(guids) > 0 {
			extra := `a.process_guid = ANY($1) AND a.presence IN ('ORDINARY', 'SUSPECT') AND NOT ` + desired + ` AND ` + domainFresh
			var err error
			removed, err = selectActual(ctx, tx, `DELETE FROM actual_lrps a WHERE `+extra+`
  AND (a.state IN ('UNCLAIMED', 'CRASHED') OR a.presence = 'SUSPECT' OR NOT `+cellFresh+`)
RETURNING `+actualColumns, pq.StringArray(guids))
			if err != nil {
				return err
			}
			running, err = selectActual(ctx, tx, `SELECT `+actualColumns+` FROM actual_lrps a WHERE `+extra+`
ORDER BY a.process_guid, a.instance_index, a.definition_id`, pq.StringArray(guids))
			if err != nil {
				return err
			}
		}
		// Instances a rollout retired are explicit stops, not convergence's own judgement,
		// so no freshness gate: their records go once their cells report (or, on a vanished
		// cell, at once — they must not be replaced).
		gone, err := selectActual(ctx, tx, `DELETE FROM actual_lrps a WHERE a.retiring AND NOT `+cellFresh+`
RETURNING `+actualColumns)
		if err != nil {
			return err
		}
		removed = append(removed, gone...)
		retiring, err := selectActual(ctx, tx, `SELECT `+actualColumns+` FROM actual_lrps a WHERE a.retiring
ORDER BY a.process_guid, a.instance_index, a.definition_id`)
		if err != nil {
			return err
		}
		running = append(running, retiring...)
		res.ExtrasRemoved, res.ExtrasToStop = len(removed), len(running)
		for _, a := range removed {
			if a.CellID != "" {
				res.ToStop = append(res.ToStop, a)
			}
		}
		res.ToStop = append(res.ToStop, running...)
		return appendEvents(ctx, tx, instanceEvents(model.EventActualLRPRemoved, removed)...)
	})
}

// reapMissingCells handles ORDINARY instances on cells whose presence expired: CLAIMED ones
// never started, so they go back to UNCLAIMED for placement; RUNNING ones may still serve
// (a partitioned cell), so they become SUSPECT and an UNCLAIMED replacement is created.
func (s *Store) reapMissingCells(ctx context.Context, res *ConvergeResult) error {
	// The common pass has no vanished cell: finding that out must not read every instance.
	// This walks the distinct cell ids of actual_lrps_cell (a skip scan: one probe per cell)
	// and keeps those without a fresh presence.
	var missing pq.StringArray
	if err := s.db.SelectContext(ctx, &missing, `WITH RECURSIVE ids AS (
    SELECT min(cell_id) AS id FROM actual_lrps WHERE cell_id <> ''
    UNION ALL
    SELECT (SELECT min(cell_id) FROM actual_lrps WHERE cell_id <> '' AND cell_id > ids.id)
    FROM ids WHERE ids.id IS NOT NULL)
SELECT id FROM ids WHERE id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM cells c WHERE c.cell_id = ids.id AND c.expires_at > now())`); err != nil {
		return err
	}
	res.MissingCells = len(missing)
	if len(missing) == 0 {
		return nil
	}
	now := s.nowNanos()
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		// Freshness is checked again: a cell may have heartbeated since. Undesired instances
		// are left to removeExtras, which stops them once their domain is fresh; replacing
		// them here would only create instances nobody wants.
		onMissing := `a.presence = 'ORDINARY' AND a.cell_id = ANY($1) AND NOT ` + cellFresh + ` AND ` + desired
		claims, err := transition(ctx, tx, onMissing+` AND a.state = 'CLAIMED'`,
			`state = 'UNCLAIMED', instance_guid = '', cell_id = '', address = '', ports = '[]',
    instance_address = '', preferred_address = '', availability_zone = '', placement_error = '', since = $2`, missing, now)
		if err != nil {
			return err
		}
		// A suspect already at the key is resolved by the next pass first; skipping the row
		// here avoids a primary-key conflict.
		suspects, err := transition(ctx, tx, onMissing+` AND a.state = 'RUNNING' AND NOT EXISTS (
    SELECT 1 FROM actual_lrps x WHERE x.process_guid = a.process_guid AND x.definition_id = a.definition_id
      AND x.instance_index = a.instance_index AND x.presence = 'SUSPECT')`, `presence = 'SUSPECT'`, missing)
		if err != nil {
			return err
		}
		var guids, defs, domains []string
		var indices, crashes []int32
		for _, c := range suspects {
			a := c.After
			guids, defs, domains = append(guids, a.ProcessGUID), append(defs, a.DefinitionID), append(domains, a.Domain)
			indices, crashes = append(indices, a.Index), append(crashes, a.CrashCount)
		}
		created, err := selectActual(ctx, tx, `
INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, crash_count, modification_epoch)
SELECT g, d, i, dom, 'UNCLAIMED', $6, c, gen_random_uuid()::text
FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[], $5::integer[]) AS n(g, d, i, dom, c)
ON CONFLICT DO NOTHING
RETURNING `+actualColumns, pq.StringArray(guids), pq.StringArray(defs), pq.Int32Array(indices),
			pq.StringArray(domains), pq.Int32Array(crashes), now)
		if err != nil {
			return err
		}
		res.MissingCellClaims, res.Suspected = len(claims), len(suspects)
		events := changeEvents(claims)
		events = append(events, changeEvents(suspects)...)
		events = append(events, instanceEvents(model.EventActualLRPCreated, created)...)
		return appendEvents(ctx, tx, events...)
	})
}

// createMissingIndices gives every index below an LRP's count that has no ORDINARY instance
// of any definition an UNCLAIMED instance of the healthy definition (the active one before
// any instance ever ran), as scaling up does.
//
// It fills an index the way every other writer of an LRP does, under the LRP's row lock:
// the free indices and the healthy definition are read after the lock is taken. Read before
// it, a scale-up (which fills the free indices too) and a rollout's first RUNNING instance
// (which changes the healthy definition) could both commit in between, and the index would
// get the scale-up's instance of the new definition and this one of the old: a duplicate.
//
// guids are the LRPs findCandidates found with a missing index: the common pass has
// none, and only those are locked.
func (s *Store) createMissingIndices(ctx context.Context, res *ConvergeResult, guids []string) error {
	if len(guids) == 0 {
		return nil
	}
	missing := `NOT EXISTS (SELECT 1 FROM actual_lrps a
    WHERE a.process_guid = l.process_guid AND a.instance_index = i AND a.presence = 'ORDINARY' AND NOT a.retiring)`
	return s.inTxRetried(ctx, func(tx *sqlx.Tx) error {
		if err := lockLRPs(ctx, tx, guids); err != nil {
			return err
		}
		// ON CONFLICT: a cell's start report of an instance the store did not know may have
		// created it since (cells' reports do not take the LRP's lock); theirs wins.
		created, err := selectActual(ctx, tx, `
INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
SELECT l.process_guid, coalesce(l.healthy_definition_id, l.active_definition_id), i, l.domain,
    'UNCLAIMED', $1, gen_random_uuid()::text
FROM desired_lrps l CROSS JOIN LATERAL generate_series(0, l.instances - 1) AS i
WHERE l.process_guid = ANY($2) AND `+missing+`
ON CONFLICT DO NOTHING
RETURNING `+actualColumns, s.nowNanos(), pq.StringArray(guids))
		if err != nil {
			return err
		}
		res.MissingIndices = len(created)
		return appendEvents(ctx, tx, instanceEvents(model.EventActualLRPCreated, created)...)
	})
}

// restartCrashed makes CRASHED instances whose back-off has passed UNCLAIMED, for placement.
// Instances no LRP wants any more stay CRASHED: placement could not place them, and
// removeExtras deletes them once their domain is fresh.
func (s *Store) restartCrashed(ctx context.Context, res *ConvergeResult, p model.RestartPolicy) error {
	now := s.nowNanos()
	maxDelay := int64(p.MaxDelay)
	if maxDelay <= 0 {
		maxDelay = math.MaxInt64 // RestartDelay has no cap then, only saturation
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		// The CASE mirrors model.RestartPolicy.RestartDelay (keep them in step; the tests
		// compare it with ShouldRestart): never above MaxRestarts, at once up to
		// ImmediateRestarts, else BaseDelay × 2^(count − ImmediateRestarts − 1) capped at
		// MaxDelay and never negative. numeric keeps 2^64 from overflowing; a larger exponent
		// changes nothing, as the product already exceeds any Duration.
		changes, err := transition(ctx, tx, `a.presence = 'ORDINARY' AND a.state = 'CRASHED'
  AND `+desired+` AND CASE
    WHEN a.crash_count > $2 THEN false
    WHEN a.crash_count <= $3 THEN true
    ELSE a.since::numeric <= $1::numeric - greatest(0, least($4::numeric * power(2::numeric, least(a.crash_count - $3 - 1, 64)), $5::numeric))
  END`, `state = 'UNCLAIMED', placement_error = '', since = $1`,
			now, p.MaxRestarts, p.ImmediateRestarts, int64(p.BaseDelay), maxDelay)
		if err != nil {
			return err
		}
		res.CrashedRestarted = len(changes)
		return appendEvents(ctx, tx, changeEvents(changes)...)
	})
}

// countStaleUnclaimed counts UNCLAIMED instances waiting longer than age. Placement retries
// them by itself; the notification wakes it in case a start request was lost (seed 003,
// "Re-emitting start requests").
func (s *Store) countStaleUnclaimed(ctx context.Context, res *ConvergeResult, age time.Duration) error {
	err := s.db.GetContext(ctx, &res.StaleUnclaimed, `SELECT count(*) FROM actual_lrps
WHERE state = 'UNCLAIMED' AND since < $1`, s.nowNanos()-int64(age))
	if err != nil || res.StaleUnclaimed == 0 {
		return err
	}
	_, err = s.db.ExecContext(ctx, `SELECT pg_notify($1, '')`, PlacementChannel)
	return err
}

// pruneDefinitions retires live definitions nothing uses any more (seed 004, "How do we
// cleanup unused?") and deletes retired ones beyond each LRP's history limit (API.md: the
// newest retired definitions stay for rollback). A definition an in-progress rollout names is
// in use even when no instance runs it yet. Definitions have no events of their own: the
// LRPDeployment's definitions map is read, not streamed.
func (s *Store) pruneDefinitions(ctx context.Context, res *ConvergeResult, keep int) error {
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if res.DefinitionsRetired, err = retireUnused(ctx, tx, "", ""); err != nil {
			return err
		}
		res.DefinitionsPruned, err = trimRetired(ctx, tx, "", keep)
		return err
	})
}
