package manifest

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var quantityType = reflect.TypeOf(resource.Quantity{})

// badQuantity places a decoding error that names no field: the decoder
// stops at a quantity that does not parse ("quantities must match the
// regular expression ..."), and the API server says no more. The value is
// the first one in raw, of a resource.Quantity field of obj's type, that
// does not parse; the message is the API server's, with that value, and
// remove lets decoding go on past it.
func badQuantity(raw map[string]any, obj any, err error) (path, msg string, remove func()) {
	if !errors.Is(err, resource.ErrFormatWrong) && !errors.Is(err, resource.ErrNumeric) && !errors.Is(err, resource.ErrSuffix) {
		return "", err.Error(), nil
	}
	path, value, remove := findQuantity(reflect.TypeOf(obj), raw, "", nil)
	if remove == nil {
		return "", err.Error(), nil
	}
	return path, field.Invalid(nil, value, err.Error()).ErrorBody(), remove
}

// findQuantity walks node, decoded JSON of Go type t, for the first value
// of a Quantity field that does not parse. It returns the value's field
// path (map keys as [key], as validation names them), the value and a
// function removing it from its parent (remove removes node itself); a nil
// function when every quantity parses.
func findQuantity(t reflect.Type, node any, path string, remove func()) (string, any, func()) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == quantityType {
		if node != nil && !parses(node) {
			return path, node, remove
		}
		return "", nil, nil
	}
	switch n := node.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			for i := range t.NumField() {
				f := t.Field(i)
				name, inline := jsonName(f)
				if inline {
					if p, v, rm := findQuantity(f.Type, n, path, remove); rm != nil {
						return p, v, rm
					}
					continue
				}
				if child, ok := n[name]; ok && name != "-" {
					if p, v, rm := findQuantity(f.Type, child, joinPath(path, name), func() { delete(n, name) }); rm != nil {
						return p, v, rm
					}
				}
			}
		case reflect.Map:
			keys := make([]string, 0, len(n))
			for k := range n {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if p, v, rm := findQuantity(t.Elem(), n[k], path+"["+k+"]", func() { delete(n, k) }); rm != nil {
					return p, v, rm
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, el := range n {
				if p, v, rm := findQuantity(t.Elem(), el, fmt.Sprintf("%s[%d]", path, i), func() { n[i] = nil }); rm != nil {
					return p, v, rm
				}
			}
		}
	}
	return "", nil, nil
}

// jsonName is the JSON name of a struct field and whether its fields are
// inlined in its parent's.
func jsonName(f reflect.StructField) (name string, inline bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if !f.IsExported() {
		return "-", false
	}
	if name == "" && (f.Anonymous || strings.Contains(","+opts+",", ",inline,")) {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}

// parses says whether a decoded JSON value is a quantity (a string, or a
// number as written).
func parses(v any) bool {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	default:
		return false
	}
	_, err := resource.ParseQuantity(strings.TrimSpace(s))
	return err == nil
}
