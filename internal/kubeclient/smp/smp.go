package smp

import (
	"errors"
	"fmt"
	"reflect"
	"sort"

	"k8s.io/apimachinery/pkg/util/json"
	forkedjson "k8s.io/apimachinery/third_party/forked/golang/json"
)

// Directive keys and values of the strategic merge patch format.
const (
	patchDirective       = "$patch"
	deleteValue          = "delete"
	replaceValue         = "replace"
	mergeValue           = "merge"
	retainKeysKey        = "$retainKeys"
	setOrderPrefix       = "$setElementOrder"
	setElementOrderKey   = setOrderPrefix + "/"
	deleteFromPrefix     = "$deleteFromPrimitiveList"
	deleteFromPrimitives = deleteFromPrefix + "/"
)

// ErrBadJSONDoc: a document is not a JSON object.
var ErrBadJSONDoc = errors.New("invalid JSON document")

// CreateTwoWayMergePatch returns the strategic merge patch that turns the
// JSON document original into modified, both encodings of dataStruct's type
// (a struct or a pointer to one), whose patchStrategy and patchMergeKey tags
// drive it. Directive keys ($patch...) inside the documents are not
// interpreted: they come from encoding API objects, which have none.
func CreateTwoWayMergePatch(original, modified []byte, dataStruct any) ([]byte, error) {
	t, orig, mod, err := decodeAll(dataStruct, decode, original, modified)
	if err != nil {
		return nil, err
	}
	patch, err := diffObject(orig, mod, t, false)
	if err != nil {
		return nil, err
	}
	return json.Marshal(patch)
}

// decodeAll is dataStruct's struct type and the two documents decoded.
func decodeAll(dataStruct any, dec func([]byte) (map[string]any, error), a, b []byte) (reflect.Type, map[string]any, map[string]any, error) {
	t := reflect.TypeOf(dataStruct)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, nil, nil, fmt.Errorf("strategic merge patch needs a struct type, not %v", t)
	}
	am, err := dec(a)
	if err != nil {
		return nil, nil, nil, err
	}
	bm, err := dec(b)
	if err != nil {
		return nil, nil, nil, err
	}
	return t, am, bm, nil
}

// decode reads a JSON object with apimachinery's decoder (whole numbers
// become int64), as the library does; empty input is an empty object.
func decode(doc []byte) (map[string]any, error) {
	m := map[string]any{}
	if len(doc) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadJSONDoc, err)
	}
	return m, nil
}

// fieldMeta is a struct field's patch metadata.
type fieldMeta struct {
	t          reflect.Type // the field's Go type
	strategy   string       // "merge", "replace" or "" (the default)
	retainKeys bool
	mergeKey   string
}

// lookup finds the field encoded as key in struct type t.
func lookup(t reflect.Type, key string) (fieldMeta, error) {
	ft, strategies, mergeKey, err := forkedjson.LookupPatchMetadataForStruct(t, key)
	if err != nil {
		return fieldMeta{}, err
	}
	m := fieldMeta{t: ft, mergeKey: mergeKey}
	// At most one strategy plus retainKeys, in either order.
	var others []string
	for _, s := range strategies {
		if s == "retainKeys" {
			m.retainKeys = true
		} else {
			others = append(others, s)
		}
	}
	switch {
	case len(strategies) > 2 || len(others) > 1:
		return fieldMeta{}, fmt.Errorf("unexpected patch strategy: %v", strategies)
	case len(others) == 1:
		m.strategy = others[0]
	}
	return m, nil
}

// lookupList is lookup for a list field: the type returned is the element's.
func lookupList(t reflect.Type, key string) (fieldMeta, error) {
	m, err := lookup(t, key)
	if err != nil {
		return m, err
	}
	et := m.t
	if et.Kind() == reflect.Pointer {
		et = et.Elem()
		if et.Kind() == reflect.Slice || et.Kind() == reflect.Array {
			et = et.Elem()
		}
	} else if et.Kind() == reflect.Slice || et.Kind() == reflect.Array {
		et = et.Elem()
		if et.Kind() == reflect.Slice || et.Kind() == reflect.Array {
			return fieldMeta{}, errors.New("unexpected slice of slice")
		}
	} else {
		return fieldMeta{}, fmt.Errorf("expected slice or array type, but got: %s", t.Kind())
	}
	m.t = et
	return m, nil
}

// diffObject returns the patch from orig to mod, objects of Go type t.
// retainKeys adds the $retainKeys list of the fields mod keeps.
func diffObject(orig, mod map[string]any, t reflect.Type, retainKeys bool) (map[string]any, error) {
	patch := map[string]any{}
	var kept []string
	for key, mv := range mod {
		if retainKeys && mv != nil {
			kept = append(kept, key)
		}
		ov, found := orig[key]
		if !found || reflect.TypeOf(ov) != reflect.TypeOf(mv) {
			patch[key] = mv
			continue
		}
		var err error
		switch o := ov.(type) {
		case map[string]any:
			err = diffMapField(key, o, mv.(map[string]any), t, patch)
		case []any:
			err = diffListField(key, o, mv.([]any), t, patch)
		default:
			if !reflect.DeepEqual(ov, mv) {
				patch[key] = mv
			}
		}
		if err != nil {
			return nil, err
		}
	}
	removed := false
	for key, ov := range orig {
		if _, found := mod[key]; !found {
			patch[key] = nil
			removed = removed || ov != nil
		}
	}
	if len(kept) > 0 && (len(patch) > 0 || removed) {
		sort.Strings(kept)
		list := make([]any, len(kept))
		for i, k := range kept {
			list[i] = k
		}
		patch[retainKeysKey] = list
	}
	return patch, nil
}

// diffMapField diffs the object-valued field key of struct type t.
func diffMapField(key string, orig, mod map[string]any, t reflect.Type, patch map[string]any) error {
	m, err := lookup(t, key)
	if err != nil {
		if reflect.DeepEqual(orig, mod) {
			return nil
		}
		return err
	}
	if m.strategy == "replace" {
		patch[key] = mod
		return nil
	}
	p, err := diffObject(orig, mod, m.t, m.retainKeys)
	if err != nil {
		return err
	}
	if len(p) > 0 {
		patch[key] = p
	}
	return nil
}

// diffListField diffs the list-valued field key of struct type t: merge
// lists element by element, every other list whole.
func diffListField(key string, orig, mod []any, t reflect.Type, patch map[string]any) error {
	m, err := lookupList(t, key)
	if err != nil {
		if reflect.DeepEqual(orig, mod) {
			return nil
		}
		return err
	}
	if m.strategy != "merge" {
		if !reflect.DeepEqual(orig, mod) {
			patch[key] = mod
		}
		return nil
	}
	items, deleted, order, err := diffMergeList(orig, mod, m)
	if err != nil {
		return err
	}
	if len(items) > 0 {
		patch[key] = items
	}
	if len(deleted) > 0 {
		patch[deleteFromPrimitives+key] = deleted
	}
	if len(order) > 0 {
		patch[setElementOrderKey+key] = order
	}
	return nil
}

// diffMergeList returns a merge list's patch items, the scalars to delete
// and the $setElementOrder list.
func diffMergeList(orig, mod []any, m fieldMeta) (items, deleted, order []any, err error) {
	if len(orig) == 0 {
		// Nothing to merge with: the new elements are the patch, in order.
		if len(mod) == 0 {
			return nil, nil, nil, nil
		}
		return mod, nil, nil, nil
	}
	kind, err := elementKind(orig, mod)
	if err != nil {
		return nil, nil, nil, err
	}
	switch kind {
	case reflect.Map:
		return diffObjectList(orig, mod, m)
	default:
		return diffScalarList(orig, mod)
	}
}

// elementKind is the kind all elements of the lists share; like the
// library, a list whose first element is a list is refused before the
// types are compared.
func elementKind(lists ...[]any) (reflect.Kind, error) {
	var first reflect.Type
	for _, l := range lists {
		for _, v := range l {
			vt := reflect.TypeOf(v)
			if first == nil {
				first = vt
				if first.Kind() == reflect.Slice {
					return reflect.Invalid, errListOfLists
				}
				continue
			}
			if vt != first {
				return reflect.Invalid, fmt.Errorf("list element types are not identical: %v", lists)
			}
		}
	}
	if first == nil {
		return reflect.Invalid, errors.New("no elements in any of the given slices")
	}
	return first.Kind(), nil
}

// keyed is a list element with its merge key's value.
type keyed struct {
	obj map[string]any
	key any
	str string // fmt %v of key: the order elements are matched in
}

func keyedElements(list []any, mergeKey string) ([]keyed, error) {
	out := make([]keyed, len(list))
	for i, v := range list {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("merge list element is %T, not an object", v)
		}
		k, ok := obj[mergeKey]
		if !ok {
			return nil, fmt.Errorf("map: %v does not contain declared merge key: %s", obj, mergeKey)
		}
		out[i] = keyed{obj: obj, key: k, str: fmt.Sprintf("%v", k)}
	}
	return out, nil
}

// diffObjectList matches elements of a list of objects by merge key: an
// element in both gets its recursive patch (with the key), an added one is
// sent whole, a removed one as {key, "$patch": "delete"}; the patch items
// follow mod's order, deletions last. The $setElementOrder list (every key
// of mod, in order) goes with any change, including a reordering.
func diffObjectList(orig, mod []any, m fieldMeta) (items, deleted, order []any, err error) {
	o, err := keyedElements(orig, m.mergeKey)
	if err != nil {
		return nil, nil, nil, err
	}
	n, err := keyedElements(mod, m.mergeKey)
	if err != nil {
		return nil, nil, nil, err
	}
	sameOrder := len(o) == len(n)
	for i := 0; sameOrder && i < len(o); i++ {
		sameOrder = o[i].key == n[i].key
	}
	pos := func(k any) int {
		for i, e := range n {
			if e.key == k {
				return i
			}
		}
		return -1
	}
	byStr := func(l []keyed) []keyed {
		s := keyedByText(append([]keyed(nil), l...))
		sort.Sort(s)
		return s
	}
	os, ns := byStr(o), byStr(n)
	type item struct {
		patch map[string]any
		pos   int
	}
	var changed []item
	var removed []any
	i, j := 0, 0
	for i < len(os) || j < len(ns) {
		switch {
		case i < len(os) && j < len(ns) && os[i].str == ns[j].str:
			p, err := diffObject(os[i].obj, ns[j].obj, m.t, m.retainKeys)
			if err != nil {
				return nil, nil, nil, err
			}
			if len(p) > 0 {
				p[m.mergeKey] = ns[j].key
				changed = append(changed, item{p, pos(ns[j].key)})
			}
			i++
			j++
		case i == len(os) || (j < len(ns) && os[i].str > ns[j].str):
			changed = append(changed, item{ns[j].obj, pos(ns[j].key)})
			j++
		default:
			removed = append(removed, map[string]any{m.mergeKey: os[i].key, patchDirective: deleteValue})
			i++
		}
	}
	sort.SliceStable(changed, func(a, b int) bool { return changed[a].pos < changed[b].pos })
	for _, c := range changed {
		items = append(items, c.patch)
	}
	items = append(items, removed...)
	if len(items) > 0 || !sameOrder {
		order = make([]any, len(n))
		for i, e := range n {
			order[i] = map[string]any{m.mergeKey: e.key}
		}
	}
	return items, nil, order, nil
}

// diffScalarList compares a merge list of scalars as sets (by their %v
// text): added values are patch items in mod's order, removed ones go to
// $deleteFromPrimitiveList. $setElementOrder is mod whenever something was
// removed or mod differs from orig's sorted values (the library compares
// against the original it has sorted in place, so an unsorted but
// unchanged list still sends its order).
func diffScalarList(orig, mod []any) (items, deleted, order []any, err error) {
	os, ns := sortedScalars(orig), sortedScalars(mod)
	i, j := 0, 0
	for i < len(os) || j < len(ns) {
		var a, b string
		if i < len(os) {
			a = fmt.Sprintf("%v", os[i])
		}
		if j < len(ns) {
			b = fmt.Sprintf("%v", ns[j])
		}
		switch {
		case i < len(os) && j < len(ns) && a == b:
			i++
			j++
		case i == len(os) || (j < len(ns) && a > b):
			items = append(items, ns[j])
			j++
		default:
			deleted = append(deleted, os[i])
			i++
		}
	}
	pos := func(v any) int {
		for k, x := range mod {
			if x == v {
				return k
			}
		}
		return -1
	}
	sort.SliceStable(items, func(a, b int) bool { return pos(items[a]) < pos(items[b]) })
	deleted = dedupScalars(deleted)
	if len(deleted) > 0 || !reflect.DeepEqual(os, mod) {
		order = mod
	}
	return items, deleted, order, nil
}

// sortedScalars is a copy of l sorted by the %v text of its values.
func sortedScalars(l []any) []any {
	s := scalarsByText(append([]any(nil), l...))
	sort.Sort(s)
	return s
}

// The library sorts with sort.Sort and a "less or equal" comparison; we do
// the same so that equal keys (duplicates the API should not hold, but
// may) end up in the same order and the patch stays byte-identical.
type keyedByText []keyed

func (s keyedByText) Len() int           { return len(s) }
func (s keyedByText) Less(i, j int) bool { return s[i].str <= s[j].str }
func (s keyedByText) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }

type scalarsByText []any

func (s scalarsByText) Len() int           { return len(s) }
func (s scalarsByText) Less(i, j int) bool { return fmt.Sprintf("%v", s[i]) <= fmt.Sprintf("%v", s[j]) }
func (s scalarsByText) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }

// dedupScalars drops repeated values the way the library does: a repeat is
// overwritten by the list's last element, so order can change.
func dedupScalars(s []any) []any {
	last := len(s) - 1
	for i := 0; i < last; i++ {
		for j := i + 1; j <= last; j++ {
			if s[i] == s[j] {
				s[j] = s[last]
				s = s[:last]
				last--
				j--
			}
		}
	}
	return s
}
