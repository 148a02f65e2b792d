package mcpserver

import (
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cowfs/cowfs/ctl"
)

// schemaOptions infer the tools' schemas: a turn (ctl.TurnRef) is a
// number or a string, and a marker's schema is written out (markerShape),
// as a marker holds the markers it replaced and inference refuses the
// cycle.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[ctl.TurnRef](): {Types: []string{"integer", "string"}},
	reflect.TypeFor[ctl.Marker]():  markerSchema(),
}}

// markerShape is ctl.Marker as it is on the wire: the markers it
// replaced are listed without their own.
type markerShape struct {
	replacedMarker
	Replaces []replacedMarker `json:"replaces,omitempty"`
}

type replacedMarker struct {
	Turn      uint64    `json:"turn"`
	ID        string    `json:"id,omitempty"`
	Anchor    string    `json:"anchor,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	Note      string    `json:"note"`
}

// markerSchema is markerShape's schema, open to fields ctl.Marker may
// gain.
func markerSchema() *jsonschema.Schema {
	s, err := jsonschema.For[markerShape](nil)
	if err != nil {
		panic(err) // a fixed type: a failure is a bug, found by every test
	}
	s.AdditionalProperties = nil
	s.Properties["replaces"].Items.AdditionalProperties = nil
	return s
}
