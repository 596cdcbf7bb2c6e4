package kernel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// argumentValidators caches one compiled validator per tool input schema
// (keyed by the schema value the kernel resolved at registration).
var argumentValidators sync.Map

var english = message.NewPrinter(language.English)

// validateArguments validates v, a generic JSON value, against schema (any
// value that marshals to a JSON Schema 2020-12 document) and, when it does
// not match, returns one plain-words message naming the JSON path of each
// problem and what was expected there, e.g. `at files[0].path: got null,
// want string`. key identifies schema for the compile cache.
func validateArguments(key, schema any, v any) (string, error) {
	sch, err := argumentValidator(key, schema)
	if err != nil {
		return "", err
	}
	err = sch.Validate(v)
	var ve *jsonschema.ValidationError
	if err == nil {
		return "", nil
	}
	if !errors.As(err, &ve) {
		return "", err
	}
	var msgs []string
	for _, leaf := range leaves(ve) {
		m := fmt.Sprintf("at %s: %s", jsonPath(leaf.InstanceLocation), leaf.ErrorKind.LocalizedString(english))
		if !slices.Contains(msgs, m) {
			msgs = append(msgs, m)
		}
	}
	slices.Sort(msgs)
	if len(msgs) > 3 {
		msgs = append(msgs[:3], fmt.Sprintf("and %d more", len(msgs)-3))
	}
	return strings.Join(msgs, "; "), nil
}

func argumentValidator(key, schema any) (*jsonschema.Schema, error) {
	if s, ok := argumentValidators.Load(key); ok {
		return s.(*jsonschema.Schema), nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "mem:///arguments.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	argumentValidators.Store(key, s)
	return s, nil
}

// leaves returns the innermost errors: the ones that say what was wrong.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// jsonPath writes an instance location as a path a model can read:
// files[0].path; the root is "arguments".
func jsonPath(loc []string) string {
	var b strings.Builder
	b.WriteString("arguments")
	for _, tok := range loc {
		switch {
		case isIndex(tok):
			b.WriteString("[" + tok + "]")
		case identRE.MatchString(tok):
			b.WriteString("." + tok)
		default:
			b.WriteString("[" + strconv.Quote(tok) + "]")
		}
	}
	return b.String()
}

func isIndex(tok string) bool {
	n, err := strconv.Atoi(tok)
	return err == nil && n >= 0 && strconv.Itoa(n) == tok
}
