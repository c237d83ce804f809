package protocol

import (
	"fmt"

	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/protocol/pb"
	"google.golang.org/protobuf/proto"
)

// PatchDefinitionProtobuf applies a rollout group's patch to the protobuf of a definition a
// BBS-protocol client desired (model.LRPDefinition.Protobuf), as model.DefinitionPatch.Apply
// does to its fields: the protocol answers with the protobuf, so it must say what the
// member runs. Fields the model has no place for are kept as the client sent them.
func PatchDefinitionProtobuf(b []byte, p model.DefinitionPatch) ([]byte, error) {
	def := &pb.LRPDefinition{}
	if err := proto.Unmarshal(b, def); err != nil {
		return nil, fmt.Errorf("decode the stored protobuf: %w", err)
	}
	if p.RootFS != nil {
		def.RootFs = *p.RootFS
	}
	for _, e := range p.Env {
		set := false
		for _, have := range def.EnvironmentVariables {
			if have.GetName() == e.Name {
				have.Value, set = e.Value, true
				break
			}
		}
		if !set {
			def.EnvironmentVariables = append(def.EnvironmentVariables, &pb.EnvironmentVariable{Name: e.Name, Value: e.Value})
		}
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(def)
}
