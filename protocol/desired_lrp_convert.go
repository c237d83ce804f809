package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// DesiredLRPs, their definitions, scheduling and routing infos and updates, between BBS's
// messages and our model.
//
// A definition a client sends is kept twice: as model fields, which cells run and the JSON
// API shows, and as its own protobuf (model.LRPDefinition.Protobuf), which the protocol
// answers with, so that every field comes back as it was sent — those the model has no place
// for (image layers, sidecars, certificate properties, readiness checks, ...) and those a
// newer client knows and we do not. A definition created through the JSON API has no
// protobuf: the protocol builds one from the model.
//
// LRPDefinition numbers its fields as DesiredLRP does, so the bytes of either decode as the
// other: a definition is cut out of a DesiredLRP, and put back in, through its bytes.

// definitionOf is the definition part of d: d without its LRP's own fields, as an
// LRPDefinition (with d's definition_id; empty when d has none).
func definitionOf(d *pb.DesiredLRP) *pb.LRPDefinition {
	c := proto.CloneOf(d)
	c.ProcessGuid, c.Domain, c.Instances, c.Routes, c.Annotation = "", "", 0, nil, ""
	c.ModificationTag, c.MetricTags, c.PreviousDefinitionId, c.RolloutStrategy = nil, nil, "", nil
	def := &pb.LRPDefinition{}
	convert(c, def)
	return def
}

// lrpFields are the numbers of DesiredLRP's own fields, which LRPDefinition reserves.
var lrpFields = map[protowire.Number]bool{1: true, 2: true, 4: true, 15: true, 19: true, 21: true, 35: true, 1001: true, 1002: true}

// dropLRPFields drops from a definition a client sent what it holds under the numbers of the
// LRP's own fields: nothing a definition can hold, and, kept, it would be read as those
// fields wherever the definition's bytes are read as its DesiredLRP.
func dropLRPFields(def *pb.LRPDefinition) {
	m := def.ProtoReflect()
	var kept []byte
	for b := m.GetUnknown(); len(b) > 0; {
		num, _, n := protowire.ConsumeField(b)
		if n < 0 {
			return // the decoder kept only well-formed fields
		}
		if !lrpFields[num] {
			kept = append(kept, b[:n]...)
		}
		b = b[n:]
	}
	m.SetUnknown(kept)
}

// desiredView is def as a DesiredLRP (the LRP's own fields unset), for the rules BBS applies
// to a desired LRP's definition.
func desiredView(def *pb.LRPDefinition) *pb.DesiredLRP {
	d := &pb.DesiredLRP{}
	convert(def, d)
	return d
}

// convert decodes the bytes of from into to: messages that share their field numbers.
func convert(from, to proto.Message) {
	b, err := canonical.Marshal(from)
	if err == nil {
		err = proto.Unmarshal(b, to)
	}
	if err != nil {
		// from is a message we decoded or built: it always encodes, and its bytes decode.
		panic(fmt.Sprintf("protocol: %T as %T: %v", from, to, err))
	}
}

// definitionToModel is def as the model holds it: the fields cells run, and def itself,
// without its id, as the definition's protobuf.
func definitionToModel(def *pb.LRPDefinition) model.LRPDefinition {
	stored := proto.CloneOf(def)
	stored.DefinitionId = ""
	b, err := canonical.Marshal(stored)
	if err != nil {
		panic(fmt.Sprintf("protocol: encode a decoded definition: %v", err))
	}
	return model.LRPDefinition{
		DefinitionID:       def.GetDefinitionId(),
		RootFS:             def.GetRootFs(),
		Env:                envToModel(def.GetEnvironmentVariables()),
		Setup:              actionToModel(def.GetSetup()),
		Action:             actionToModel(def.GetAction()),
		Monitor:            actionToModel(def.GetMonitor()),
		CheckDefinition:    checksToModel(def.GetCheckDefinition()),
		StartTimeoutMs:     def.GetStartTimeoutMs(),
		MemoryMB:           def.GetMemoryMb(),
		DiskMB:             def.GetDiskMb(),
		CPUWeight:          def.GetCpuWeight(),
		Privileged:         def.GetPrivileged(),
		Ports:              def.GetPorts(),
		LogSource:          def.GetLogSource(),
		LogGUID:            def.GetLogGuid(),
		MetricsGUID:        def.GetMetricsGuid(),
		EgressRules:        listToJSON(def.GetEgressRules()),
		CachedDependencies: listToJSON(def.GetCachedDependencies()),
		VolumeMounts:       listToJSON(def.GetVolumeMounts()),
		Network:            messageToJSON(def.GetNetwork()),
		PlacementTags:      def.GetPlacementTags(),
		MaxPids:            def.GetMaxPids(),
		Protobuf:           b,
	}
}

// definitionFromModel is m as BBS's message: the protobuf a client sent, or, for a
// definition created through the JSON API, one built from the model's fields.
func definitionFromModel(m *model.LRPDefinition) (*pb.LRPDefinition, error) {
	def := &pb.LRPDefinition{}
	if m.Protobuf != nil {
		if err := proto.Unmarshal(m.Protobuf, def); err != nil {
			return nil, fmt.Errorf("decode the stored protobuf of definition %q: %w", m.DefinitionID, err)
		}
		def.DefinitionId = m.DefinitionID
		return def, nil
	}
	def = &pb.LRPDefinition{
		DefinitionId:         m.DefinitionID,
		RootFs:               m.RootFS,
		EnvironmentVariables: envFromModel(m.Env),
		Setup:                actionFromModel(m.Setup),
		Action:               actionFromModel(m.Action),
		Monitor:              actionFromModel(m.Monitor),
		CheckDefinition:      checksFromModel(m.CheckDefinition),
		StartTimeoutMs:       m.StartTimeoutMs,
		MemoryMb:             m.MemoryMB,
		DiskMb:               m.DiskMB,
		CpuWeight:            m.CPUWeight,
		Privileged:           m.Privileged,
		Ports:                m.Ports,
		LogSource:            m.LogSource,
		LogGuid:              m.LogGUID,
		MetricsGuid:          m.MetricsGUID,
		EgressRules:          listFromJSON(m.EgressRules, func() *pb.SecurityGroupRule { return &pb.SecurityGroupRule{} }),
		CachedDependencies:   listFromJSON(m.CachedDependencies, func() *pb.CachedDependency { return &pb.CachedDependency{} }),
		VolumeMounts:         listFromJSON(m.VolumeMounts, func() *pb.VolumeMount { return &pb.VolumeMount{} }),
		PlacementTags:        m.PlacementTags,
		MaxPids:              m.MaxPids,
	}
	if n := (&pb.Network{}); messageFromJSON(m.Network, n) {
		def.Network = n
	}
	return def, nil
}

// desiredToModel is a DesiredLRP a client desires, as the model holds it.
func desiredToModel(d *pb.DesiredLRP) *model.DesiredLRP {
	return &model.DesiredLRP{
		ProcessGUID:   d.GetProcessGuid(),
		Domain:        d.GetDomain(),
		Instances:     d.GetInstances(),
		Routes:        routesToModel(d.GetRoutes()),
		Annotation:    d.GetAnnotation(),
		MetricTags:    metricTagsToModel(d.GetMetricTags()),
		LRPDefinition: definitionToModel(definitionOf(d)),
		// Checked by the model's Validate (ValidateDefault and Supported), as the JSON API's.
		RolloutStrategy: strategyToModel(d.GetRolloutStrategy()),
	}
}

// desiredFromModel is the LRP seen through its active definition, as BBS serves it (before
// the revision's downgrade and PopulateMetricsGuid). Routes and the modification tag are
// always there, as BBS always sets them.
func desiredFromModel(m *model.DesiredLRP) (*pb.DesiredLRP, error) {
	d := &pb.DesiredLRP{}
	if m.Protobuf != nil {
		// The stored definition decodes as its DesiredLRP.
		if err := proto.Unmarshal(m.Protobuf, d); err != nil {
			return nil, fmt.Errorf("decode the stored protobuf of %s's definition %q: %w", m.ProcessGUID, m.DefinitionID, err)
		}
	} else {
		def, err := definitionFromModel(&m.LRPDefinition)
		if err != nil {
			return nil, err
		}
		convert(def, d)
	}
	d.ProcessGuid = m.ProcessGUID
	d.Domain = m.Domain
	d.Instances = m.Instances
	d.Routes = routesFromModel(m.Routes)
	d.Annotation = m.Annotation
	d.ModificationTag = tagFromModel(m.ModificationTag)
	d.MetricTags = metricTagsFromModel(m.MetricTags)
	d.DefinitionId = m.DefinitionID
	d.PreviousDefinitionId = m.PreviousDefinitionID
	d.RolloutStrategy = strategyFromModel(m.RolloutStrategy)
	return d, nil
}

// routingInfoFromModel is BBS's routing subset of a DesiredLRP (fields 1, 2, 4, 15, 17, 21
// and 35), with our definition ids.
func routingInfoFromModel(m *model.DesiredLRP) *pb.DesiredLRP {
	return &pb.DesiredLRP{
		ProcessGuid:          m.ProcessGUID,
		Domain:               m.Domain,
		Instances:            m.Instances,
		Routes:               routesFromModel(m.Routes),
		LogGuid:              m.LogGUID,
		ModificationTag:      tagFromModel(m.ModificationTag),
		MetricTags:           metricTagsFromModel(m.MetricTags),
		DefinitionId:         m.DefinitionID,
		PreviousDefinitionId: m.PreviousDefinitionID,
	}
}

// schedulingInfoFromModel is a scheduling info as BBS serves it: key, resource, routes and
// modification tag always set, and the volume placement too, as BBS always builds one.
func schedulingInfoFromModel(i *model.DesiredLRPSchedulingInfo) *pb.DesiredLRPSchedulingInfo {
	return &pb.DesiredLRPSchedulingInfo{
		DesiredLrpKey:        &pb.DesiredLRPKey{ProcessGuid: i.ProcessGUID, Domain: i.Domain, LogGuid: i.LogGUID},
		Annotation:           i.Annotation,
		Instances:            i.Instances,
		DesiredLrpResource:   &pb.DesiredLRPResource{MemoryMb: i.MemoryMB, DiskMb: i.DiskMB, RootFs: i.RootFS, MaxPids: i.MaxPids},
		Routes:               routesFromModel(i.Routes),
		ModificationTag:      tagFromModel(i.ModificationTag),
		VolumePlacement:      &pb.VolumePlacement{DriverNames: i.VolumeDrivers},
		PlacementTags:        i.PlacementTags,
		DefinitionId:         i.DefinitionID,
		PreviousDefinitionId: i.PreviousDefinitionID,
		HealthyDefinitionId:  i.HealthyDefinitionID,
	}
}

// updateToModel is what the model applies of an update: instances and annotation when
// present, routes when present (present and empty clears them), metric tags when there are
// any (on the wire an empty map is an absent one), and our definition and strategies. Image credentials
// are the handler's: they rewrite the definition's protobuf.
func updateToModel(u *pb.DesiredLRPUpdate) *model.DesiredLRPUpdate {
	m := &model.DesiredLRPUpdate{}
	if u.Instances != nil {
		n := *u.Instances
		m.Instances = &n
	}
	if u.GetRoutes() != nil {
		r := routesToModel(u.GetRoutes())
		if r == nil {
			r = model.Routes{}
		}
		m.Routes = &r
	}
	if u.Annotation != nil {
		a := *u.Annotation
		m.Annotation = &a
	}
	if len(u.GetMetricTags()) > 0 {
		t := metricTagsToModel(u.GetMetricTags())
		m.MetricTags = &t
	}
	if u.GetDefinition() != nil {
		def := definitionToModel(u.GetDefinition())
		m.Definition = &def
	}
	// Both checked by the model's Validate, as the JSON API's: strategy only beside a
	// definition, rollout_strategy as an LRP's default.
	m.Strategy = strategyToModel(u.GetStrategy())
	m.RolloutStrategy = strategyToModel(u.GetRolloutStrategy())
	return m
}

func tagFromModel(t model.ModificationTag) *pb.ModificationTag {
	return &pb.ModificationTag{Epoch: t.Epoch, Index: t.Index}
}

// routesToModel keeps each value's bytes as they are (raw JSON to the model).
func routesToModel(r *pb.ProtoRoutes) model.Routes {
	if len(r.GetRoutes()) == 0 {
		return nil
	}
	out := make(model.Routes, len(r.GetRoutes()))
	for name, v := range r.GetRoutes() {
		out[name] = json.RawMessage(v)
	}
	return out
}

func routesFromModel(r model.Routes) *pb.ProtoRoutes {
	out := &pb.ProtoRoutes{}
	if len(r) > 0 {
		out.Routes = make(map[string][]byte, len(r))
		for name, v := range r {
			out.Routes[name] = v
		}
	}
	return out
}

func metricTagsToModel(tags map[string]*pb.MetricTagValue) map[string]json.RawMessage {
	if len(tags) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(tags))
	for name, v := range tags {
		out[name] = model.MetricTagValue{Static: v.GetStatic(), Dynamic: model.MetricTagDynamic(v.GetDynamic())}.JSON()
	}
	return out
}

// metricTagsFromModel reads the tags the model holds; one that does not parse (written
// before the JSON API checked them) is left out.
func metricTagsFromModel(tags map[string]json.RawMessage) map[string]*pb.MetricTagValue {
	if len(tags) == 0 {
		return nil
	}
	out := make(map[string]*pb.MetricTagValue, len(tags))
	for name, raw := range tags {
		v, err := model.ParseMetricTag(raw)
		if err != nil {
			continue
		}
		out[name] = &pb.MetricTagValue{Static: v.Static, Dynamic: pb.MetricTagValue_DynamicValue(v.Dynamic)}
	}
	return out
}

// The model keeps egress rules, cached dependencies, volume mounts and the network as JSON in
// the shape of BBS's JSON (cfdot's): field names as in the .proto.
var toJSON = protojson.MarshalOptions{UseProtoNames: true}

var fromJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

func messageToJSON(m proto.Message) json.RawMessage {
	if m == nil || !m.ProtoReflect().IsValid() {
		return nil
	}
	b, err := toJSON.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("protocol: %T as JSON: %v", m, err))
	}
	// protojson varies its spacing on purpose; the model stores a stable form.
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		panic(fmt.Sprintf("protocol: %T as JSON: %v", m, err))
	}
	return compact.Bytes()
}

func listToJSON[T proto.Message](items []T) json.RawMessage {
	if len(items) == 0 {
		return nil
	}
	parts := make([][]byte, len(items))
	for i, it := range items {
		parts[i] = messageToJSON(it)
	}
	return json.RawMessage("[" + string(bytes.Join(parts, []byte(","))) + "]")
}

// messageFromJSON reads into m what the JSON API stored; false when there is nothing there
// or it does not parse.
func messageFromJSON(b json.RawMessage, m proto.Message) bool {
	if len(b) == 0 || string(b) == "null" {
		return false
	}
	return fromJSON.Unmarshal(b, m) == nil
}

// listFromJSON reads the items the JSON API stored, leaving out those that do not parse.
func listFromJSON[T proto.Message](b json.RawMessage, newItem func() T) []T {
	var raws []json.RawMessage
	if len(b) == 0 || json.Unmarshal(b, &raws) != nil {
		return nil
	}
	var out []T
	for _, raw := range raws {
		if it := newItem(); messageFromJSON(raw, it) {
			out = append(out, it)
		}
	}
	return out
}
