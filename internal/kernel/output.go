package kernel

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Object is the type of a top-level output member that holds a JSON object
// whose members are not declared to keep the schema small (a view struct,
// a json.RawMessage of an object): its schema says "object". Any Go value
// that encodes to a JSON object may be stored in it.
type Object any

// Array is Object's counterpart for a member that holds a JSON array.
type Array any

// outputTypeSchemas map the loose member types to their JSON types.
var outputTypeSchemas = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[Object](): {Type: "object"},
	reflect.TypeFor[Array]():  {Type: "array"},
}

// marshaler is the type of a member that encodes itself.
var marshaler = reflect.TypeFor[json.Marshaler]()

// outputShape is what Register derives from a tool's output type Out so
// that its schema says exactly when a top-level member may be null
// (decision 0046):
//   - a member with omitempty or omitzero is never null (a nil value is
//     omitted), so "null" is not in its type;
//   - a required slice or map member is never null either: fill replaces a
//     nil one by an empty one before the output is encoded;
//   - a required pointer or interface member may be null, and "null" is in
//     its type.
type outputShape struct {
	// fill holds the field index paths of the required slice and map
	// members of Out (none for an output that is not a struct).
	fill [][]int
}

// shapeOutput derives the outputShape of Out and rewrites the top-level
// member types of its schema accordingly. It returns an error when a
// top-level member has no type (a plain any: declare Object or Array).
func shapeOutput[Out any](schema *jsonschema.Schema) (outputShape, error) {
	var sh outputShape
	t := reflect.TypeFor[Out]()
	if t.Kind() != reflect.Struct {
		return sh, nil
	}
	var walk func(t reflect.Type, index []int) error
	walk = func(t reflect.Type, index []int) error {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			at := append(slices.Clone(index), i)
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				if err := walk(f.Type, at); err != nil {
					return err
				}
				continue
			}
			if name == "" {
				name = f.Name
			}
			ps := schema.Properties[name]
			if ps == nil {
				continue
			}
			if ps.Type == "" && len(ps.Types) == 0 && len(ps.AnyOf) == 0 && ps.Ref == "" {
				return fmt.Errorf("output member %s has no JSON type: declare it kernel.Object, kernel.Array or a concrete type", name)
			}
			omitted := slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")
			switch k := f.Type.Kind(); {
			case omitted:
				nonNull(ps)
			case f.Type.Implements(marshaler):
				// Its own encoding decides (a nil json.RawMessage is null).
				nullable(ps)
			case k == reflect.Slice || k == reflect.Map:
				sh.fill = append(sh.fill, at)
				nonNull(ps)
			case k == reflect.Pointer || k == reflect.Interface:
				nullable(ps)
			}
		}
		return nil
	}
	return sh, walk(t, nil)
}

// nonNull removes "null" from the type of s.
func nonNull(s *jsonschema.Schema) {
	if len(s.Types) == 0 {
		return
	}
	kept := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" })
	if len(kept) == 1 {
		s.Type, s.Types = kept[0], nil
		return
	}
	s.Types = kept
}

// nullable adds "null" to the type of s.
func nullable(s *jsonschema.Schema) {
	switch {
	case s.Type != "":
		s.Types, s.Type = []string{"null", s.Type}, ""
	case len(s.Types) > 0 && !slices.Contains(s.Types, "null"):
		s.Types = append([]string{"null"}, s.Types...)
	}
}

// apply replaces the nil required slice and map members of out, a pointer
// to the tool's output, by empty ones.
func (sh outputShape) apply(out any) {
	if len(sh.fill) == 0 {
		return
	}
	v := reflect.ValueOf(out).Elem()
	for _, index := range sh.fill {
		f := v.FieldByIndex(index)
		if !f.IsNil() {
			continue
		}
		switch f.Kind() {
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 0, 0))
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
		}
	}
}
