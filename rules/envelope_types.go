package rules

import (
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// The CEL types of a filter's and an ordering key's `event`: the envelope a
// consumer receives (intake.Envelope, §5), field by field, so the checker
// knows that `event.type` is a string and `event.data` may be anything. At
// run time `event` stays the decoded JSON object (DecodeEvent); the fields
// below read it. A field the envelope does not have is refused when the rule
// is saved, as a misspelt name can never match.
const (
	envelopeType = "intake.Envelope"
	subjectType  = "intake.Subject"
)

// celField is one field of a declared object.
type celField struct {
	typ      *types.Type
	nullable bool // null is a value of it too
	// omitted is the field's value when the JSON leaves it out (it is
	// omitempty in intake.Envelope); nil means it is always present, and a
	// missing one is an error, as it is for a map.
	omitted any
}

var celObjects = map[string]map[string]celField{
	envelopeType: {
		"id":                {typ: types.StringType},
		"type":              {typ: types.StringType},
		"kind":              {typ: types.StringType},
		"org_id":            {typ: types.StringType},
		"connection_id":     {typ: types.StringType},
		"provider":          {typ: types.StringType},
		"provider_event_id": {typ: types.StringType},
		"message_id":        {typ: types.StringType},
		"replay":            {typ: types.BoolType},
		"replay_of":         {typ: types.NewNullableType(types.StringType), nullable: true}, // null unless a replay
		"occurred_at":       {typ: types.StringType},                                        // RFC 3339: timestamp(event.occurred_at)
		"received_at":       {typ: types.StringType},
		"subject":           {typ: types.NewObjectType(subjectType), nullable: true}, // null unless intake linked the event to a record
		"data":              {typ: types.DynType},                                    // the provider's JSON, any shape
		"data_truncated":    {typ: types.BoolType, omitted: false},
		"body_url":          {typ: types.StringType, omitted: ""},
	},
	subjectType: {
		"app":       {typ: types.StringType},
		"record_id": {typ: types.StringType},
	},
}

// envelopeDecls declares `event` as the envelope and teaches the
// environment its fields.
func envelopeDecls() cel.EnvOption {
	return func(env *cel.Env) (*cel.Env, error) {
		env, err := cel.CustomTypeProvider(&envelopeProvider{Provider: env.CELTypeProvider()})(env)
		if err != nil {
			return nil, err
		}
		return cel.Variable("event", types.NewObjectType(envelopeType))(env)
	}
}

// envelopeProvider answers for the declared objects and defers every other
// type to the environment's own provider.
type envelopeProvider struct {
	types.Provider
}

func (p *envelopeProvider) FindStructType(name string) (*types.Type, bool) {
	if _, ok := celObjects[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

func (p *envelopeProvider) FindStructFieldNames(name string) ([]string, bool) {
	fields, ok := celObjects[name]
	if !ok {
		return p.Provider.FindStructFieldNames(name)
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	return names, true
}

func (p *envelopeProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	fields, ok := celObjects[name]
	if !ok {
		return p.Provider.FindStructFieldType(name, field)
	}
	f, ok := fields[field]
	if !ok {
		return nil, false
	}
	return &types.FieldType{
		Type: f.typ,
		IsSet: func(target any) bool {
			m, ok := target.(map[string]any)
			if !ok {
				return false
			}
			_, ok = m[field]
			return ok
		},
		GetFrom: func(target any) (any, error) { return f.get(target, name, field) },
	}, true
}

// NewValue refuses to build a declared object: a rule reads the envelope,
// it does not make one.
func (p *envelopeProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := celObjects[name]; ok {
		return types.NewErr("%s cannot be created in a rule", name)
	}
	return p.Provider.NewValue(name, fields)
}

// get reads field of the decoded object target, which must hold the
// declared type (an event given to a dry run may not).
func (f celField) get(target any, object, field string) (any, error) {
	m, ok := target.(map[string]any)
	if !ok {
		if target == nil || target == types.NullValue {
			return nil, fmt.Errorf("no such key: %s (the %s is null)", field, object)
		}
		return nil, fmt.Errorf("no such key: %s", field)
	}
	v, ok := m[field]
	if !ok {
		if f.omitted != nil {
			return f.omitted, nil
		}
		return nil, fmt.Errorf("no such key: %s", field)
	}
	if !f.holds(v) {
		return nil, fmt.Errorf("%s.%s is %s, want %s", object, field, jsonKind(v), f.typ)
	}
	return v, nil
}

// holds reports whether the JSON value v is of the field's type.
func (f celField) holds(v any) bool {
	if v == nil {
		return f.nullable
	}
	switch f.typ.Kind() {
	case types.StringKind:
		_, ok := v.(string)
		return ok
	case types.BoolKind:
		_, ok := v.(bool)
		return ok
	case types.StructKind:
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
