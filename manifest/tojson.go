package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
)

// errOverLimit is a value whose JSON is larger than the limit it was
// written with.
var errOverLimit = errors.New("over the limit")

// jsonWriter writes a value parsed by go-yaml v2 as JSON, converting it as
// sigs.k8s.io/yaml (kubectl's YAMLToJSON) does: map keys that are numbers or
// booleans become strings, the rest as encoding/json marshals it (but <, >
// and & unescaped, as they mean the same). It is
// where aliases are expanded: it stops with errOverLimit once the JSON would
// pass limit bytes, so that a small document whose aliases expand to
// gigabytes costs no more than limit.
type jsonWriter struct {
	buf   []byte
	limit int
}

// toJSON writes v as JSON, at most limit bytes.
func toJSON(v any, limit int) ([]byte, error) {
	w := jsonWriter{limit: limit}
	if err := w.value(v); err != nil {
		return nil, err
	}
	return w.buf, nil
}

func (w *jsonWriter) value(v any) error {
	switch v := v.(type) {
	case nil:
		return w.raw("null")
	case bool:
		return w.raw(strconv.FormatBool(v))
	case string:
		if len(w.buf)+len(v)+2 > w.limit {
			return errOverLimit
		}
		if plain(v) {
			w.buf = append(append(append(w.buf, '"'), v...), '"')
			return nil
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // <, > and & as they are: what the file says, no larger
		if err := enc.Encode(v); err != nil {
			return err
		}
		return w.rawBytes(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	case int, int64, uint64, float64:
		return w.marshal(v)
	case []any:
		if err := w.raw("["); err != nil {
			return err
		}
		for i, el := range v {
			if i > 0 {
				if err := w.raw(","); err != nil {
					return err
				}
			}
			if err := w.value(el); err != nil {
				return err
			}
		}
		return w.raw("]")
	case map[any]any:
		return w.object(v)
	}
	return fmt.Errorf("unsupported value of type %s", reflect.TypeOf(v))
}

// object writes a mapping with its keys as strings, in their order (as
// encoding/json writes a map).
func (w *jsonWriter) object(m map[any]any) error {
	type entry struct {
		key string
		v   any
	}
	entries := make([]entry, 0, len(m))
	for k, v := range m {
		key, err := keyString(k, v)
		if err != nil {
			return err
		}
		entries = append(entries, entry{key, v})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	if err := w.raw("{"); err != nil {
		return err
	}
	for i, e := range entries {
		if i > 0 {
			if err := w.raw(","); err != nil {
				return err
			}
		}
		if err := w.value(e.key); err != nil {
			return err
		}
		if err := w.raw(":"); err != nil {
			return err
		}
		if err := w.value(e.v); err != nil {
			return err
		}
	}
	return w.raw("}")
}

// keyString is a YAML map key as a JSON object's key, as sigs.k8s.io/yaml
// converts it.
func keyString(k, v any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case int:
		return strconv.Itoa(k), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case float64:
		s := strconv.FormatFloat(k, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, nil
	case bool:
		return strconv.FormatBool(k), nil
	}
	return "", fmt.Errorf("unsupported map key of type: %s, key: %+#v, value: %+#v", reflect.TypeOf(k), k, v)
}

func (w *jsonWriter) marshal(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.rawBytes(b)
}

func (w *jsonWriter) rawBytes(b []byte) error {
	if len(w.buf)+len(b) > w.limit {
		return errOverLimit
	}
	w.buf = append(w.buf, b...)
	return nil
}

func (w *jsonWriter) raw(s string) error {
	if len(w.buf)+len(s) > w.limit {
		return errOverLimit
	}
	w.buf = append(w.buf, s...)
	return nil
}

// plain reports whether s is written as is between quotes: printable
// ASCII, no quote or backslash.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
