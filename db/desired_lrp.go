package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/updatable-lrps/bbs/model"
)

// desiredRow is one row of desired_lrps.
type desiredRow struct {
	ProcessGUID string `db:"process_guid"`
	lrpColumns
	ActiveDefinitionID   string         `db:"active_definition_id"`
	HealthyDefinitionID  sql.NullString `db:"healthy_definition_id"`
	PreviousDefinitionID sql.NullString `db:"previous_definition_id"`
	ModificationEpoch    string         `db:"modification_epoch"`
	ModificationIndex    uint32         `db:"modification_index"`
}

// lrpColumns are an LRP's own columns of desired_lrps, as a desire writes them.
type lrpColumns struct {
	Domain      string   `db:"domain"`
	Instances   int32    `db:"instances"`
	Routes      jsonText `db:"routes"`
	RoutesExact []byte   `db:"routes_exact"`
	Annotation  string   `db:"annotation"`
	MetricTags  jsonText `db:"metric_tags"`
	// RolloutStrategy is the LRP's default strategy (NULL: none).
	RolloutStrategy jsonText `db:"rollout_strategy"`
}

const desiredColumns = `l.process_guid, l.domain, l.instances, l.routes, l.routes_exact, l.annotation, l.metric_tags, l.rollout_strategy,
    l.active_definition_id, l.healthy_definition_id, l.previous_definition_id,
    l.modification_epoch, l.modification_index`

// desiredWithDefinition is a desired_lrps row joined with one of its definitions.
type desiredWithDefinition struct {
	desiredRow
	Def definitionRow `db:"def"`
}

const desiredWithActiveDefinition = `SELECT ` + desiredColumns + `, ` + definitionAsDef + `
FROM desired_lrps l
JOIN lrp_definitions d ON d.process_guid = l.process_guid AND d.definition_id = l.active_definition_id`

// filterClause selects LRPs (alias l) by domain, process guids and app guids (prefixes of
// process guids); $1 to $3 are the filter. A query with it is planPerCall.
const filterClause = ` WHERE ($1 = '' OR l.domain = $1)
    AND (cardinality($2::text[]) = 0 OR l.process_guid = ANY($2))
    AND (cardinality($3::text[]) = 0 OR EXISTS (
        SELECT 1 FROM unnest($3::text[]) AS a(guid) WHERE starts_with(l.process_guid, a.guid)))`

func filterArgs(f model.DesiredLRPFilter) []any {
	return []any{f.Domain, pq.StringArray(nonNil(f.ProcessGUIDs)), pq.StringArray(nonNil(f.AppGUIDs))}
}

func (r *desiredRow) tag() model.ModificationTag {
	return model.ModificationTag{Epoch: r.ModificationEpoch, Index: r.ModificationIndex}
}

func (r *desiredRow) routesAndTags() (model.Routes, map[string]json.RawMessage, error) {
	var routes model.Routes
	var tags map[string]json.RawMessage
	if r.RoutesExact != nil {
		var exact map[string][]byte
		if err := json.Unmarshal(r.RoutesExact, &exact); err != nil {
			return nil, nil, fmt.Errorf("decode routes of %s: %w", r.ProcessGUID, err)
		}
		routes = make(model.Routes, len(exact))
		for name, v := range exact {
			routes[name] = v
		}
	} else if err := json.Unmarshal(r.Routes, &routes); err != nil {
		return nil, nil, fmt.Errorf("decode routes of %s: %w", r.ProcessGUID, err)
	}
	if err := json.Unmarshal(r.MetricTags, &tags); err != nil {
		return nil, nil, fmt.Errorf("decode metric tags of %s: %w", r.ProcessGUID, err)
	}
	if len(routes) == 0 {
		routes = nil
	}
	if len(tags) == 0 {
		tags = nil
	}
	return routes, tags, nil
}

func (r *desiredWithDefinition) model() (*model.DesiredLRP, error) {
	def, err := r.Def.model()
	if err != nil {
		return nil, err
	}
	routes, tags, err := r.routesAndTags()
	if err != nil {
		return nil, err
	}
	strategy, err := decodeStrategy(r.RolloutStrategy)
	if err != nil {
		return nil, err
	}
	return &model.DesiredLRP{
		ProcessGUID:          r.ProcessGUID,
		Domain:               r.Domain,
		Instances:            r.Instances,
		Routes:               routes,
		Annotation:           r.Annotation,
		MetricTags:           tags,
		ModificationTag:      r.tag(),
		LRPDefinition:        def,
		PreviousDefinitionID: r.PreviousDefinitionID.String,
		RolloutStrategy:      strategy,
	}, nil
}

func marshalJSONMap[T any](m map[string]T) (jsonText, error) {
	if m == nil {
		return jsonText("{}"), nil
	}
	return json.Marshal(m)
}

// encodeRoutes is routes as its two columns: the JSON document (routes), which re-encoding
// compacts and escapes, and the values byte for byte (routes_exact), which the BBS protocol
// answers with (Cloud Controller copies the diego-ssh value back on every update).
func encodeRoutes(routes model.Routes) (jsonText, []byte, error) {
	doc, err := marshalJSONMap(routes)
	if err != nil {
		return nil, nil, err
	}
	exact := make(map[string][]byte, len(routes))
	for name, v := range routes {
		exact[name] = v
	}
	b, err := json.Marshal(exact)
	return doc, b, err
}

// DesireLRP stores a new LRP, its first definition, an UNCLAIMED instance for each index and
// their events. It is one statement, desireLRP, and so one round trip: in a transaction of
// one statement each, a burst of desires (25,000 after a restore) kept PostgreSQL's sessions
// idle in transaction, waiting for the next statement. A missing definition id becomes the
// process guid (seed 000).
func (s *Store) DesireLRP(ctx context.Context, in *model.DesiredLRP) (*model.DesiredLRP, error) {
	d := *in
	if d.DefinitionID == "" {
		d.DefinitionID = d.ProcessGUID
	}
	d.PreviousDefinitionID = ""
	d.ModificationTag = model.ModificationTag{Epoch: uuid.NewString()}
	args, err := s.newDesireArgs(&d)
	if err != nil {
		return nil, err
	}
	query, params, err := s.db.BindNamed(desireLRP, args)
	if err != nil {
		return nil, err
	}
	_, err = s.db.ExecContext(ctx, query, params...)
	if model.IsType(mapError(err), model.ErrResourceExists) {
		return nil, model.Errorf(model.ErrResourceExists, "desired LRP %q already exists", d.ProcessGUID)
	}
	if err != nil {
		return nil, mapError(err)
	}
	return &d, nil
}

// desireLRP inserts an LRP, its definition, its instances and their events (a sqlx named
// query of desireArgs). One statement is atomic without a transaction: the foreign key from
// the LRP to its definition is deferred, checked at its end. The instances' count is read
// from the LRP's inserted row, so that they are written after it, as the transaction did:
// an existing guid fails on the primary key before anything else is written, and of two
// concurrent desires of one guid the second waits there, holding nothing. The events are
// the LRP's and those of the instances inserted (an index may still be held by a removed
// LRP's instance), in that order; desireArgs encoded them from the rows as written.
var desireLRP = `WITH lrp AS (
    INSERT INTO desired_lrps (process_guid, domain, instances, routes, routes_exact, annotation, metric_tags,
        rollout_strategy, active_definition_id, modification_epoch)
    VALUES (:process_guid, :domain, :instances, :routes, :routes_exact, :annotation, :metric_tags,
        :rollout_strategy, :definition_id, :modification_epoch)
    RETURNING instances),
definition AS (` + insertDefinition + `),
created AS (` + insertMissingInstances("(SELECT instances FROM lrp)", "(CAST(:epochs AS text[]))[i + 1]") + `
    RETURNING instance_index)
INSERT INTO events (name, data, process_guid, placement)
` + eventRows(":event_names", ":event_data", ":event_guids", ":event_placement") + `
WHERE e.n = 1 OR e.n - 2 IN (SELECT instance_index FROM created)
ORDER BY e.n`

// desireArgs are desireLRP's parameters: the definition's row (insertDefinition's), the
// LRP's columns, and the instances' modification epochs and since, chosen here so that
// their events can be encoded here, as every other event is.
type desireArgs struct {
	definitionRow
	lrpColumns
	ModificationEpoch string `db:"modification_epoch"`
	Since             int64  `db:"since"`
	// Epochs are the instances' modification epochs, by index.
	Epochs pq.StringArray `db:"epochs"`
	// encodedEvents are the LRP's created event, then the instance's at each index.
	encodedEvents
}

func (s *Store) newDesireArgs(d *model.DesiredLRP) (*desireArgs, error) {
	routes, routesExact, err := encodeRoutes(d.Routes)
	if err != nil {
		return nil, err
	}
	tags, err := marshalJSONMap(d.MetricTags)
	if err != nil {
		return nil, err
	}
	def, err := newDefinitionRow(d.ProcessGUID, &d.LRPDefinition)
	if err != nil {
		return nil, err
	}
	strategy, err := encodeStrategy(d.RolloutStrategy)
	if err != nil {
		return nil, err
	}
	a := &desireArgs{definitionRow: *def, lrpColumns: lrpColumns{Domain: d.Domain, Instances: d.Instances, Routes: routes,
		RoutesExact: routesExact, Annotation: d.Annotation, MetricTags: tags, RolloutStrategy: strategy},
		ModificationEpoch: d.ModificationTag.Epoch, Since: s.nowNanos(), Epochs: make(pq.StringArray, max(d.Instances, 0))}
	events := []pendingEvent{event(model.EventDesiredLRPCreated, model.NewDesiredLRPEvent(d))}
	for i := range a.Epochs {
		a.Epochs[i] = uuid.NewString()
		events = append(events, event(model.EventActualLRPCreated, unclaimedInstance(d, int32(i), a.Since, a.Epochs[i])))
	}
	e, err := encodeEvents(events)
	if err != nil {
		return nil, err
	}
	a.encodedEvents = *e
	return a, nil
}

// DesiredLRPByProcessGUID returns the LRP projected through its active definition.
func (s *Store) DesiredLRPByProcessGUID(ctx context.Context, guid string) (*model.DesiredLRP, error) {
	var row desiredWithDefinition
	err := s.db.GetContext(ctx, &row, desiredWithActiveDefinition+` WHERE l.process_guid = $1`, guid)
	if err == sql.ErrNoRows {
		return nil, notFound("desired LRP", guid)
	}
	if err != nil {
		return nil, mapError(err)
	}
	return row.model()
}

// DesiredLRPs lists the LRPs that match the filter, ordered by process guid.
func (s *Store) DesiredLRPs(ctx context.Context, f model.DesiredLRPFilter) ([]model.DesiredLRP, error) {
	out := []model.DesiredLRP{}
	err := s.EachDesiredLRP(ctx, f, func(d *model.DesiredLRP) error {
		out = append(out, *d)
		return nil
	})
	return out, err
}

// EachDesiredLRP calls fn with each LRP DesiredLRPs would list, in the same order, as the rows
// arrive, so that a list of every LRP (Cloud Controller's sync, cfdot) never sits in memory;
// an error from fn ends the walk and is returned.
func (s *Store) EachDesiredLRP(ctx context.Context, f model.DesiredLRPFilter, fn func(*model.DesiredLRP) error) error {
	return eachRow(ctx, s, planPerCall+desiredWithActiveDefinition+filterClause+` ORDER BY l.process_guid`, filterArgs(f),
		func(row *desiredWithDefinition) error {
			d, err := row.model()
			if err != nil {
				return err
			}
			return fn(d)
		})
}

// eachRow runs query and calls fn with each row scanned into a fresh T, as the rows arrive.
func eachRow[T any](ctx context.Context, s *Store, query string, args []any, fn func(*T) error) error {
	rows, err := s.db.QueryxContext(ctx, query, args...)
	if err != nil {
		return mapError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var row T
		if err := rows.StructScan(&row); err != nil {
			return mapError(err)
		}
		if err := fn(&row); err != nil {
			return err
		}
	}
	return mapError(rows.Err())
}

// UpdateResult is what an update changed.
type UpdateResult struct {
	Before, After *model.DesiredLRP
	// ToStop are the CLAIMED or RUNNING instances a scale-down left beyond the desired count:
	// their cells must stop them (the records go when the cells report the stop).
	ToStop []model.ActualLRP
}

// UpdateDesiredLRP changes the instances, routes, annotation or metric tags of an LRP in one
// transaction. Scaling up creates UNCLAIMED instances of the healthy definition (the active
// one before any instance ever ran); scaling down deletes the UNCLAIMED and CRASHED instances
// beyond the count and returns the rest for stopping. A definition change is a rollout and is
// not handled here.
func (s *Store) UpdateDesiredLRP(ctx context.Context, guid string, u *model.DesiredLRPUpdate) (*UpdateResult, error) {
	if u.Definition != nil {
		return nil, fmt.Errorf("UpdateDesiredLRP: definition changes go through a rollout")
	}
	var res UpdateResult
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		row, err := lockDesired(ctx, tx, guid)
		if err != nil {
			return err
		}
		if res.Before, err = s.desiredInTx(ctx, tx, guid); err != nil {
			return err
		}
		events, err := s.applyUpdate(ctx, tx, row, u, &res)
		if err != nil {
			return err
		}
		if res.After, err = s.desiredInTx(ctx, tx, guid); err != nil {
			return err
		}
		return appendEvents(ctx, tx, append([]pendingEvent{changed(model.EventDesiredLRPChanged, model.NewDesiredLRPEvent(res.Before), model.NewDesiredLRPEvent(res.After))}, events...)...)
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// applyUpdate writes u's instances, routes, annotation and metric tags on the locked row
// (bumping the modification tag), creates or retires instances for a new count, and returns
// the instance events; the CLAIMED or RUNNING instances to stop go to res.ToStop.
func (s *Store) applyUpdate(ctx context.Context, tx *sqlx.Tx, row *desiredRow, u *model.DesiredLRPUpdate, res *UpdateResult) ([]pendingEvent, error) {
	set := *row
	var err error
	if u.Instances != nil {
		set.Instances = *u.Instances
	}
	if u.Annotation != nil {
		set.Annotation = *u.Annotation
	}
	if u.Routes != nil {
		if set.Routes, set.RoutesExact, err = encodeRoutes(*u.Routes); err != nil {
			return nil, err
		}
	}
	if u.MetricTags != nil {
		if set.MetricTags, err = marshalJSONMap(*u.MetricTags); err != nil {
			return nil, err
		}
	}
	if u.RolloutStrategy != nil {
		if set.RolloutStrategy, err = encodeStrategy(u.RolloutStrategy); err != nil {
			return nil, err
		}
		// The rollout this update may start resolves over the new default.
		row.RolloutStrategy = set.RolloutStrategy
	}
	if _, err := tx.ExecContext(ctx, `
UPDATE desired_lrps SET instances = $2, routes = $3, routes_exact = $4, annotation = $5, metric_tags = $6,
    rollout_strategy = $7, modification_index = modification_index + 1, updated_at = now()
WHERE process_guid = $1`, row.ProcessGUID, set.Instances, set.Routes, set.RoutesExact, set.Annotation, set.MetricTags,
		set.RolloutStrategy); err != nil {
		return nil, err
	}
	if a := u.ActiveDefinition; a != nil {
		if a.DefinitionID != row.ActiveDefinitionID {
			return nil, model.Errorf(model.ErrResourceConflict, "LRP %q changed its active definition to %q meanwhile; retry",
				row.ProcessGUID, row.ActiveDefinitionID)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE lrp_definitions SET protobuf = $3 WHERE process_guid = $1 AND definition_id = $2`,
			row.ProcessGUID, a.DefinitionID, a.Protobuf); err != nil {
			return nil, err
		}
	}
	var created, removed []model.ActualLRP
	var kept []pendingEvent
	if set.Instances > row.Instances {
		def := row.ActiveDefinitionID
		if row.HealthyDefinitionID.Valid {
			def = row.HealthyDefinitionID.String
		}
		if kept, err = unretireIndicesBelow(ctx, tx, row.ProcessGUID, set.Instances, []string{def, row.ActiveDefinitionID}); err != nil {
			return nil, err
		}
		if created, err = s.createMissingInstances(ctx, tx, row.ProcessGUID, row.Domain, def, set.Instances); err != nil {
			return nil, err
		}
	}
	if set.Instances < row.Instances {
		if removed, res.ToStop, err = s.retireIndicesFrom(ctx, tx, row.ProcessGUID, set.Instances); err != nil {
			return nil, err
		}
	}
	return append(append(kept, instanceEvents(model.EventActualLRPCreated, created)...), instanceEvents(model.EventActualLRPRemoved, removed)...), nil
}

func (s *Store) desiredInTx(ctx context.Context, tx *sqlx.Tx, guid string) (*model.DesiredLRP, error) {
	var row desiredWithDefinition
	if err := tx.GetContext(ctx, &row, desiredWithActiveDefinition+` WHERE l.process_guid = $1`, guid); err != nil {
		return nil, err
	}
	return row.model()
}

// RemoveResult is what removing an LRP changed.
type RemoveResult struct {
	Removed *model.DesiredLRP
	// ToStop are the CLAIMED or RUNNING instances whose cells must stop them.
	ToStop []model.ActualLRP
}

// RemoveDesiredLRP deletes an LRP with its definitions and its UNCLAIMED and CRASHED
// instances, fails its rollout if one is in progress, and returns the instances that cells
// must stop, in one transaction.
func (s *Store) RemoveDesiredLRP(ctx context.Context, guid string) (*RemoveResult, error) {
	var res RemoveResult
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := lockDesired(ctx, tx, guid); err != nil {
			return err
		}
		var err error
		if res.Removed, err = s.desiredInTx(ctx, tx, guid); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM desired_lrps WHERE process_guid = $1`, guid); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
UPDATE rollouts SET state = 'failed', reason = 'the LRP was removed', finished_at = now()
WHERE process_guid = $1 AND state IN `+inProgressStates, guid); err != nil {
			return err
		}
		// A group's member whose LRP is gone did not fail: it is skipped, rolling or not.
		if _, err := tx.ExecContext(ctx, `
UPDATE rollout_group_members SET state = 'skipped', reason = 'the LRP was removed'
WHERE process_guid = $1 AND state IN ('pending', 'rolling')`, guid); err != nil {
			return err
		}
		var removed []model.ActualLRP
		if removed, res.ToStop, err = s.retireIndicesFrom(ctx, tx, guid, 0); err != nil {
			return err
		}
		return appendEvents(ctx, tx, append([]pendingEvent{event(model.EventDesiredLRPRemoved, model.NewDesiredLRPEvent(res.Removed))},
			instanceEvents(model.EventActualLRPRemoved, removed)...)...)
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}
