package smp

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/json"
)

// Errors worded as the library's.
var (
	errBadPrimitiveList = errors.New("invalid patch format of primitive list")
	errBadRetainKeys    = errors.New("invalid patch format of retainKeys")
	errBadSetOrder      = errors.New("invalid patch format of setElementOrder list")
	errListOfLists      = errors.New("lists of lists are not supported")
)

// StrategicMergePatch applies the strategic merge patch to the JSON
// document original, an encoding of dataStruct's type (a struct or a
// pointer to one), and returns the result as the API server's
// strategicpatch.StrategicMergePatch does for the same arguments: maps
// merged recursively, null deleting a key, merge lists merged by their
// patchMergeKey (with "$patch": "delete" / "replace" items,
// $setElementOrder, $deleteFromPrimitiveList), "$patch" on a map
// ("replace", "delete"), $retainKeys, every other list replaced. A
// malformed patch is an error worded as the library's.
func StrategicMergePatch(original, patch []byte, dataStruct any) ([]byte, error) {
	t, orig, p, err := decodeAll(dataStruct, decodeApply, original, patch)
	if err != nil {
		return nil, err
	}
	out, err := mergeMap(orig, p, t)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// decodeApply reads a document as the library's apply does: nil is an
// empty object, anything else must be a JSON object (or null).
func decodeApply(doc []byte) (map[string]any, error) {
	if doc == nil {
		doc = []byte("{}")
	}
	m := map[string]any{}
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadJSONDoc, err)
	}
	return m, nil
}

func errBadArgType(expected, actual any) error {
	return fmt.Errorf("expected a %s, but received a %s", reflect.TypeOf(expected), reflect.TypeOf(actual))
}

func errNoMergeKey(m map[string]any, k string) error {
	return fmt.Errorf("map: %v does not contain declared merge key: %s", m, k)
}

// errNotScalar refuses an object or list where a scalar must be (a merge
// key's value, an item of a $retainKeys, $setElementOrder or primitive
// list): the library panics on comparing them, the API server answers 500.
func errNotScalar(v any) error {
	return fmt.Errorf("%v is not a scalar: a merge key's value or an item of a list of scalars must be one", v)
}

// scalar: v can be compared and used as a map key.
func scalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

func errBadPatchType(v any, m map[string]any) error {
	return fmt.Errorf("unknown patch type: %s in map: %v", v, m)
}

// mergeMap merges patch into original, objects of Go type t; both may be
// changed. The steps and their order are the library's (mergeMap with
// MergeParallelList and IgnoreUnmatchedNulls, as the API server calls it),
// which decides the result in corner cases such as both a list and its
// $deleteFromPrimitiveList naming a value.
func mergeMap(original, patch map[string]any, t reflect.Type) (map[string]any, error) {
	if v, ok := patch[patchDirective]; ok {
		switch v {
		case replaceValue:
			delete(patch, patchDirective)
			return patch, nil
		case deleteValue:
			return map[string]any{}, nil
		}
		return nil, errBadPatchType(v, patch)
	}
	if original == nil {
		original = map[string]any{}
	}
	if err := applyRetainKeys(original, patch); err != nil {
		return nil, err
	}
	if err := applySetElementOrder(original, patch, t); err != nil {
		return nil, err
	}
	for k, pv := range patch {
		isDeleteList := false
		if strings.HasPrefix(k, deleteFromPrefix) {
			key, err := extractKey(k, deleteFromPrefix)
			if err != nil {
				return nil, err
			}
			k, isDeleteList = key, true
		}
		if pv == nil {
			delete(original, k)
			continue
		}
		ov, found := original[k]
		if !found || reflect.TypeOf(ov) != reflect.TypeOf(pv) {
			if !isDeleteList {
				discardNulls(pv)
				if v, keep := removeDirectives(pv); keep {
					original[k] = v
				} else {
					delete(original, k)
				}
			}
			continue
		}
		var err error
		switch o := ov.(type) {
		case map[string]any:
			var m fieldMeta
			if m, err = lookup(t, k); err != nil {
				return nil, err
			}
			if m.strategy == replaceValue {
				original[k] = pv
			} else {
				original[k], err = mergeMap(o, pv.(map[string]any), m.t)
			}
		case []any:
			var m fieldMeta
			if m, err = lookupList(t, k); err != nil {
				return nil, err
			}
			original[k], err = mergeListField(o, pv.([]any), m, isDeleteList)
		default:
			if v, keep := removeDirectives(pv); keep {
				original[k] = v
			} else {
				delete(original, k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return original, nil
}

// mergeListField merges a list field: merge lists (and every
// $deleteFromPrimitiveList) element-wise, every other list replaced.
func mergeListField(original, patch []any, m fieldMeta, isDeleteList bool) ([]any, error) {
	if m.strategy == mergeValue || isDeleteList {
		return mergeList(original, patch, m, isDeleteList)
	}
	return patch, nil
}

// extractKey is the field name after a directive prefix and a slash.
func extractKey(s, prefix string) (string, error) {
	parts := strings.SplitN(s, "/", 2)
	if len(parts) <= 1 || parts[0] != prefix {
		if prefix == deleteFromPrefix {
			return "", errBadPrimitiveList
		}
		return "", errBadSetOrder
	}
	return parts[1], nil
}

// applyRetainKeys clears the keys of original that the patch's
// $retainKeys list does not name, after checking the patch sets only
// named keys.
func applyRetainKeys(original, patch map[string]any) error {
	rk, found := patch[retainKeysKey]
	if !found {
		return nil
	}
	delete(patch, retainKeysKey)
	list, ok := rk.([]any)
	if !ok {
		return errBadRetainKeys
	}
	keep := map[any]struct{}{}
	for _, v := range list {
		if !scalar(v) {
			return errBadRetainKeys
		}
		keep[v] = struct{}{}
	}
	for k, v := range patch {
		if v == nil || strings.HasPrefix(k, deleteFromPrefix) || strings.HasPrefix(k, setOrderPrefix) {
			continue
		}
		if _, found := keep[k]; !found {
			return errBadRetainKeys
		}
	}
	for k := range original {
		if _, found := keep[k]; !found {
			delete(original, k)
		}
	}
	return nil
}

// applySetElementOrder merges every list that has a $setElementOrder
// directive, ordered by it: the precedence is the directive, then the
// patch list's order, then the live list's. It removes the directive and
// the list from the patch.
func applySetElementOrder(original, patch map[string]any, t reflect.Type) error {
	for key, pv := range patch {
		if !strings.HasPrefix(key, setOrderPrefix) {
			continue
		}
		delete(patch, key)
		order, ok := pv.([]any)
		if !ok {
			return errBadArgType([]any(nil), pv)
		}
		field, err := extractKey(key, setOrderPrefix)
		if err != nil {
			return err
		}
		var origList, patchList []any
		ov, foundOrig := original[field]
		if foundOrig {
			if origList, ok = ov.([]any); !ok {
				return errBadArgType(origList, ov)
			}
		}
		plv, foundPatch := patch[field]
		if foundPatch {
			if patchList, ok = plv.([]any); !ok {
				return errBadArgType(patchList, plv)
			}
		}
		m, err := lookupList(t, field)
		if err != nil {
			return err
		}
		if err := checkSetOrder(patchList, order, m.mergeKey); err != nil {
			return err
		}
		var merged []any
		switch {
		case foundOrig && !foundPatch:
			merged = origList
		case !foundOrig && foundPatch:
			v, _ := removeDirectives(patchList)
			merged = v.([]any)
		case foundOrig && foundPatch:
			if merged, err = mergeListField(origList, patchList, m, false); err != nil {
				return err
			}
		default:
			continue
		}
		inPatch, serverOnly, err := partition(merged, order, m.mergeKey)
		if err != nil {
			return err
		}
		kind, err := elementKind(origList, patchList)
		if err != nil {
			return err
		}
		both, err := normalizeOrder(inPatch, serverOnly, order, origList, m.mergeKey, kind)
		if err != nil {
			return err
		}
		original[field] = both
		delete(patch, field)
	}
	return nil
}

// checkSetOrder: the patch list's items (deletions aside) appear in the
// $setElementOrder list, in the same relative order.
func checkSetOrder(patchList, order []any, mergeKey string) error {
	if len(order) == 0 || len(patchList) == 0 {
		return nil
	}
	items := patchList
	if mergeKey != "" {
		var err error
		if items, _, err = splitDeletions(patchList); err != nil {
			return err
		}
	}
	pi, oi := 0, 0
	for pi < len(items) && oi < len(order) {
		if hasDirective(items[pi]) {
			pi++
			continue
		}
		eq, err := sameMergeKey(items[pi], order[oi], mergeKey)
		if err != nil {
			return err
		}
		if eq {
			pi++
		}
		oi++
	}
	if pi < len(items) && oi >= len(order) {
		return fmt.Errorf("The order in patch list:\n%v\n doesn't match %s list:\n%v\n", patchList, setOrderPrefix, order)
	}
	return nil
}

func hasDirective(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, found := m[patchDirective]
	return found
}

// sameMergeKey compares two items: scalars by value, objects by merge key.
func sameMergeKey(a, b any, mergeKey string) (bool, error) {
	if mergeKey == "" {
		if !scalar(a) || !scalar(b) {
			return false, errNotScalar(a)
		}
		return a == b, nil
	}
	am, ok := a.(map[string]any)
	if !ok {
		return false, errBadArgType(am, a)
	}
	bm, ok := b.(map[string]any)
	if !ok {
		return false, errBadArgType(bm, b)
	}
	av, ok := am[mergeKey]
	if !ok {
		return false, errNoMergeKey(am, mergeKey)
	}
	bv, ok := bm[mergeKey]
	if !ok {
		return false, errNoMergeKey(bm, mergeKey)
	}
	if !scalar(av) || !scalar(bv) {
		return false, errNotScalar(av)
	}
	return av == bv, nil
}

// mergeList merges a merge list (or applies a $deleteFromPrimitiveList):
// scalars are a set, objects are matched by merge key, with "$patch"
// items deleting one or replacing the whole list. Patch items keep the
// patch's order, server-only items fit around them in the live order.
func mergeList(original, patch []any, m fieldMeta, isDeleteList bool) ([]any, error) {
	if len(original) == 0 && len(patch) == 0 {
		return original, nil
	}
	kind, err := elementKind(original, patch)
	if err != nil {
		return nil, err
	}
	var merged []any
	if kind != reflect.Map {
		if isDeleteList {
			return deleteScalars(original, patch), nil
		}
		merged = dedupScalars(append(original, patch...))
	} else {
		if m.mergeKey == "" {
			return nil, fmt.Errorf("cannot merge lists without merge key for %s", m.t.Kind())
		}
		if original, patch, err = applyListDirectives(original, patch, m.mergeKey); err != nil {
			return nil, err
		}
		if merged, err = mergeObjectItems(original, patch, m); err != nil {
			return nil, err
		}
	}
	inPatch, serverOnly, err := partition(merged, patch, m.mergeKey)
	if err != nil {
		return nil, err
	}
	return normalizeOrder(inPatch, serverOnly, patch, original, m.mergeKey, kind)
}

// applyListDirectives acts on a merge list's "$patch" items: "delete"
// removes the live items with its key, "replace" makes the other patch
// items the whole list, "merge" and anything else are refused. It
// returns the list to merge into and the patch without them.
func applyListDirectives(original, patch []any, mergeKey string) ([]any, []any, error) {
	rest := []any{}
	replace := false
	for _, v := range patch {
		item := v.(map[string]any)
		d, ok := item[patchDirective]
		if !ok {
			rest = append(rest, v)
			continue
		}
		switch d {
		case deleteValue:
			key, ok := item[mergeKey]
			if !ok {
				return nil, nil, errNoMergeKey(item, mergeKey)
			}
			var err error
			if original, err = deleteByKey(original, mergeKey, key); err != nil {
				return nil, nil, err
			}
		case replaceValue:
			replace = true
		case mergeValue:
			return nil, nil, errors.New("merging lists cannot yet be specified in the patch")
		default:
			return nil, nil, errBadPatchType(d, item)
		}
	}
	if replace {
		return rest, nil, nil
	}
	return original, rest, nil
}

func deleteByKey(list []any, mergeKey string, key any) ([]any, error) {
	for {
		_, i, found, err := findByKey(list, mergeKey, key)
		if err != nil {
			return nil, err
		}
		if !found {
			return list, nil
		}
		list = append(list[:i], list[i+1:]...)
	}
}

// mergeObjectItems merges each patch item into the live item with its
// merge key, or appends it.
func mergeObjectItems(original, patch []any, m fieldMeta) ([]any, error) {
	for _, v := range patch {
		item := v.(map[string]any)
		key, ok := item[m.mergeKey]
		if !ok {
			return nil, errNoMergeKey(item, m.mergeKey)
		}
		live, i, found, err := findByKey(original, m.mergeKey, key)
		if err != nil {
			return nil, err
		}
		if !found {
			original = append(original, v)
			continue
		}
		merged, err := mergeMap(live, item, m.t)
		if err != nil {
			return nil, err
		}
		original[i] = merged
	}
	return original, nil
}

// findByKey is the first object in list whose mergeKey is key.
func findByKey(list []any, mergeKey string, key any) (map[string]any, int, bool, error) {
	if !scalar(key) {
		return nil, 0, false, errNotScalar(key)
	}
	for i, v := range list {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, 0, false, fmt.Errorf("value for key %v is not a map", i)
		}
		if k, ok := obj[mergeKey]; ok && k == key {
			return obj, i, true, nil
		}
	}
	return nil, 0, false, nil
}

// deleteScalars is list without the values in del.
func deleteScalars(list, del []any) []any {
	drop := map[any]bool{}
	for _, v := range del {
		drop[v] = true
	}
	out := make([]any, 0, len(list))
	for _, v := range list {
		if !drop[v] {
			out = append(out, v)
		}
	}
	return out
}

// partition splits list into the items by (scalars by value, objects by
// merge key) names and the others.
func partition(list, by []any, mergeKey string) (in, others []any, err error) {
	in = make([]any, 0, len(list))
	others = make([]any, 0, len(list))
	if mergeKey == "" {
		named := map[any]bool{}
		for _, v := range by {
			if !scalar(v) {
				return nil, nil, errNotScalar(v)
			}
			named[v] = true
		}
		for _, v := range list {
			if !scalar(v) {
				return nil, nil, errNotScalar(v)
			}
			if named[v] {
				in = append(in, v)
			} else {
				others = append(others, v)
			}
		}
		return in, others, nil
	}
	for _, v := range list {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, nil, errBadArgType(obj, v)
		}
		key, ok := obj[mergeKey]
		if !ok {
			return nil, nil, errNoMergeKey(obj, mergeKey)
		}
		_, _, found, err := findByKey(by, mergeKey, key)
		if err != nil {
			return nil, nil, err
		}
		if found {
			in = append(in, v)
		} else {
			others = append(others, v)
		}
	}
	return in, others, nil
}

// normalizeOrder sorts the patch items by patchOrder and the server-only
// ones by serverOrder, then interleaves them by serverOrder where both
// are found in it (patch items first otherwise).
func normalizeOrder(patch, serverOnly, patchOrder, serverOrder []any, mergeKey string, kind reflect.Kind) ([]any, error) {
	patch, err := sortByOrder(patch, patchOrder, mergeKey, kind)
	if err != nil {
		return nil, err
	}
	if serverOnly, err = sortByOrder(serverOnly, serverOrder, mergeKey, kind); err != nil {
		return nil, err
	}
	indexOf := func(v any) int { return orderIndex(serverOrder, v, mergeKey, kind) }
	out := make([]any, 0, len(patch)+len(serverOnly))
	i, j := 0, 0
	for i < len(serverOnly) || j < len(patch) {
		switch {
		case i >= len(serverOnly):
			out = append(out, patch[j])
			j++
		case j >= len(patch):
			out = append(out, serverOnly[i])
			i++
		default:
			li, ri := indexOf(serverOnly[i]), indexOf(patch[j])
			if li >= 0 && ri >= 0 && li < ri {
				out = append(out, serverOnly[i])
				i++
			} else {
				out = append(out, patch[j])
				j++
			}
		}
	}
	return out, nil
}

// sortByOrder stably sorts list by the position of its items in order,
// "$patch": "delete" items last; the comparison is the library's (an item
// missing from order is "less" than everything), so the result is too.
func sortByOrder(list, order []any, mergeKey string, kind reflect.Kind) ([]any, error) {
	var deletions []any
	if kind == reflect.Map {
		if err := checkMergeKeys(mergeKey, list, order); err != nil {
			return nil, err
		}
		var err error
		if list, deletions, err = splitDeletions(list); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(list, func(i, j int) bool {
		if a := orderIndex(order, list[i], mergeKey, kind); a >= 0 {
			if b := orderIndex(order, list[j], mergeKey, kind); b >= 0 {
				return a < b
			}
		}
		return true
	})
	return append(list, deletions...), nil
}

// checkMergeKeys: every item of the lists is an object with a scalar merge
// key.
func checkMergeKeys(mergeKey string, lists ...[]any) error {
	for _, l := range lists {
		for _, v := range l {
			obj, ok := v.(map[string]any)
			if !ok {
				return errBadArgType(obj, v)
			}
			k, ok := obj[mergeKey]
			if !ok {
				return errNoMergeKey(obj, mergeKey)
			}
			if !scalar(k) {
				return errNotScalar(k)
			}
		}
	}
	return nil
}

// splitDeletions separates the "$patch": "delete" items of a list of
// objects from the others.
func splitDeletions(l []any) (keep, del []any, err error) {
	for _, v := range l {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, nil, errBadArgType(obj, v)
		}
		if d, found := obj[patchDirective]; found && d == deleteValue {
			del = append(del, v)
		} else {
			keep = append(keep, v)
		}
	}
	return keep, del, nil
}

// orderIndex is v's position in l (objects compared by merge key), or -1.
func orderIndex(l []any, v any, mergeKey string, kind reflect.Kind) int {
	val := func(x any) any { return x }
	if kind == reflect.Map {
		val = func(x any) any {
			obj, ok := x.(map[string]any)
			if !ok {
				return nil
			}
			return obj[mergeKey]
		}
	}
	want := val(v)
	for i, x := range l {
		if val(x) == want {
			return i
		}
	}
	return -1
}

// removeDirectives drops the "$patch" objects from a patch value taken
// whole (a field the original lacks); false when v itself is one.
func removeDirectives(v any) (any, bool) {
	switch o := v.(type) {
	case map[string]any:
		if _, found := o[patchDirective]; found {
			return nil, false
		}
		for k, x := range o {
			if nv, keep := removeDirectives(x); keep {
				o[k] = nv
			} else {
				delete(o, k)
			}
		}
		return o, true
	case []any:
		var out []any
		if o != nil {
			out = []any{}
		}
		for _, x := range o {
			if nv, keep := removeDirectives(x); keep {
				out = append(out, nv)
			}
		}
		return out, true
	}
	return v, true
}

// discardNulls drops null members of objects anywhere in v: a null for a
// field the original lacks deletes nothing.
func discardNulls(v any) {
	switch o := v.(type) {
	case map[string]any:
		for k, x := range o {
			if x == nil {
				delete(o, k)
			} else {
				discardNulls(x)
			}
		}
	case []any:
		for _, x := range o {
			discardNulls(x)
		}
	}
}
