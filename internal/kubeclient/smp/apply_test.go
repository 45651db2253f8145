package smp

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// applyAgrees applies patch to original with ours and with the library:
// both refuse it, or both give the same bytes. It returns ours.
func applyAgrees(t testing.TB, original, patch []byte, typ any) ([]byte, error) {
	t.Helper()
	ours, ourErr := StrategicMergePatch(original, patch, typ)
	lib, libErr := libraryApply(original, patch, typ)
	if (ourErr != nil) != (libErr != nil) {
		t.Fatalf("errors differ: ours %v, library %v\noriginal %s\npatch %s", ourErr, libErr, original, patch)
	}
	if ourErr == nil && string(ours) != string(lib) {
		t.Fatalf("results differ\n ours %s\n  lib %s\noriginal %s\npatch %s", ours, lib, original, patch)
	}
	return ours, ourErr
}

// libraryApply is the library's apply, with its panics (on objects or
// lists where it compares scalars; the API server answers 500) as errors.
func libraryApply(original, patch []byte, typ any) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("library panicked: %v", p)
		}
	}()
	return strategicpatch.StrategicMergePatch(original, patch, typ)
}

// TestStrategicMergePatch pins what each kind of patch kubectl sends does
// to the objects the local API serves; each case is also checked against
// the library, errors included.
func TestStrategicMergePatch(t *testing.T) {
	const pod = `{"metadata":{"name":"p","labels":{"a":"1","b":"2"},"finalizers":["x","y","z"]},
	"spec":{"containers":[{"name":"a","image":"i1","args":["1","2"],"env":[{"name":"E","value":"1"},{"name":"F","value":"2"}]},{"name":"b","image":"i2"}],
	"volumes":[{"name":"v","emptyDir":{"medium":"Memory"}}],"tolerations":[{"key":"k1"},{"key":"k2"}]}}`
	const secret = `{"metadata":{"name":"s"},"type":"Opaque","data":{"k":"MQ==","l":"Mg=="},"stringData":{"m":"3"}}`
	const configMap = `{"metadata":{"name":"c"},"data":{"k":"1","l":"2"},"binaryData":{"b":"AA=="}}`
	for _, tc := range []struct {
		name     string
		typ      any
		original string
		patch    string
		want     string // "" when the patch is refused
	}{
		{"scalar replaced, map merged", v1.ConfigMap{}, configMap, `{"data":{"k":"9","n":"3"}}`,
			`{"binaryData":{"b":"AA=="},"data":{"k":"9","l":"2","n":"3"},"metadata":{"name":"c"}}`},
		{"null deletes a key", v1.Secret{}, secret, `{"data":{"l":null},"stringData":null}`,
			`{"data":{"k":"MQ=="},"metadata":{"name":"s"},"type":"Opaque"}`},
		{"null for a missing key is dropped, also inside a new value", v1.ConfigMap{}, configMap, `{"nope":null,"metadata":{"labels":{"a":"1","b":null}}}`,
			`{"binaryData":{"b":"AA=="},"data":{"k":"1","l":"2"},"metadata":{"labels":{"a":"1"},"name":"c"}}`},
		{"map $patch replace", v1.ConfigMap{}, configMap, `{"data":{"$patch":"replace","z":"0"}}`,
			`{"binaryData":{"b":"AA=="},"data":{"z":"0"},"metadata":{"name":"c"}}`},
		{"map $patch delete", v1.ConfigMap{}, configMap, `{"data":{"$patch":"delete"}}`,
			`{"binaryData":{"b":"AA=="},"data":{},"metadata":{"name":"c"}}`},
		{"map $patch merge is refused", v1.ConfigMap{}, configMap, `{"data":{"$patch":"merge","k":"2"}}`, ""},
		{"map unknown $patch is refused", v1.ConfigMap{}, configMap, `{"data":{"$patch":"bogus"}}`, ""},
		{"merge list merged by key, new item appended", v1.Pod{}, pod, `{"spec":{"containers":[{"name":"b","image":"i3"},{"name":"c","image":"i4"}]}}`,
			`{"metadata":{"finalizers":["x","y","z"],"labels":{"a":"1","b":"2"},"name":"p"},"spec":{"containers":[{"args":["1","2"],"env":[{"name":"E","value":"1"},{"name":"F","value":"2"}],"image":"i1","name":"a"},{"image":"i3","name":"b"},{"image":"i4","name":"c"}],"tolerations":[{"key":"k1"},{"key":"k2"}],"volumes":[{"emptyDir":{"medium":"Memory"},"name":"v"}]}}`},
		{"nested merge list and atomic list", v1.Pod{}, pod, `{"spec":{"containers":[{"name":"a","args":["3"],"env":[{"name":"F","value":"9"}]}]}}`,
			`{"metadata":{"finalizers":["x","y","z"],"labels":{"a":"1","b":"2"},"name":"p"},"spec":{"containers":[{"args":["3"],"env":[{"name":"E","value":"1"},{"name":"F","value":"9"}],"image":"i1","name":"a"},{"image":"i2","name":"b"}],"tolerations":[{"key":"k1"},{"key":"k2"}],"volumes":[{"emptyDir":{"medium":"Memory"},"name":"v"}]}}`},
		{"list without a merge strategy is replaced", v1.Pod{}, pod, `{"spec":{"tolerations":[{"key":"k3"}]}}`,
			`{"metadata":{"finalizers":["x","y","z"],"labels":{"a":"1","b":"2"},"name":"p"},"spec":{"containers":[{"args":["1","2"],"env":[{"name":"E","value":"1"},{"name":"F","value":"2"}],"image":"i1","name":"a"},{"image":"i2","name":"b"}],"tolerations":[{"key":"k3"}],"volumes":[{"emptyDir":{"medium":"Memory"},"name":"v"}]}}`},
		{"list item $patch delete", v1.Pod{}, pod, `{"spec":{"containers":[{"name":"a","$patch":"delete"}]}}`,
			`{"metadata":{"finalizers":["x","y","z"],"labels":{"a":"1","b":"2"},"name":"p"},"spec":{"containers":[{"image":"i2","name":"b"}],"tolerations":[{"key":"k1"},{"key":"k2"}],"volumes":[{"emptyDir":{"medium":"Memory"},"name":"v"}]}}`},
		{"list $patch replace", v1.Pod{}, pod, `{"spec":{"containers":[{"name":"c","image":"i5"},{"$patch":"replace"}]}}`,
			`{"metadata":{"finalizers":["x","y","z"],"labels":{"a":"1","b":"2"},"name":"p"},"spec":{"containers":[{"image":"i5","name":"c"}],"tolerations":[{"key":"k1"},{"key":"k2"}],"volumes":[{"emptyDir":{"medium":"Memory"},"name":"v"}]}}`},
		{"list $patch merge is refused", v1.Pod{}, pod, `{"spec":{"containers":[{"name":"a","$patch":"merge"}]}}`, ""},
		{"list unknown $patch is refused", v1.Pod{}, pod, `{"spec":{"containers":[{"name":"a","$patch":"bogus"}]}}`, ""},
		{"list delete without the merge key is refused", v1.Pod{}, pod, `{"spec":{"containers":[{"$patch":"delete"}]}}`, ""},
		{"list item without the merge key is refused", v1.Pod{}, pod, `{"spec":{"containers":[{"image":"i9"}]}}`, ""},
		{"$setElementOrder orders a merge list of objects", v1.Pod{}, pod,
			`{"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"c"},{"name":"a"}],"containers":[{"name":"c","image":"i6"}]}}`,
			`{"metadata":{"finalizers":["x","y","z"],"labels":{"a":"1","b":"2"},"name":"p"},"spec":{"containers":[{"image":"i2","name":"b"},{"image":"i6","name":"c"},{"args":["1","2"],"env":[{"name":"E","value":"1"},{"name":"F","value":"2"}],"image":"i1","name":"a"}],"tolerations":[{"key":"k1"},{"key":"k2"}],"volumes":[{"emptyDir":{"medium":"Memory"},"name":"v"}]}}`},
		{"$setElementOrder out of step with the list is refused", v1.Pod{}, pod,
			`{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"name":"b","image":"x"},{"name":"a","image":"y"}]}}`, ""},
		{"$setElementOrder with a bad prefix is refused", v1.Pod{}, pod, `{"spec":{"$setElementOrderX":[]}}`, ""},
		{"$setElementOrder and $deleteFromPrimitiveList on scalars", v1.Pod{}, pod,
			`{"metadata":{"$setElementOrder/finalizers":["z","w","x"],"$deleteFromPrimitiveList/finalizers":["y"],"finalizers":["w"]}}`,
			`{"metadata":{"finalizers":["z","w","x"],"labels":{"a":"1","b":"2"},"name":"p"},"spec":{"containers":[{"args":["1","2"],"env":[{"name":"E","value":"1"},{"name":"F","value":"2"}],"image":"i1","name":"a"},{"image":"i2","name":"b"}],"tolerations":[{"key":"k1"},{"key":"k2"}],"volumes":[{"emptyDir":{"medium":"Memory"},"name":"v"}]}}`},
		{"merge list of scalars: patch items in the patch order, the rest around them", v1.Pod{}, pod, `{"metadata":{"finalizers":["y","q"]}}`,
			`{"metadata":{"finalizers":["x","y","q","z"],"labels":{"a":"1","b":"2"},"name":"p"},"spec":{"containers":[{"args":["1","2"],"env":[{"name":"E","value":"1"},{"name":"F","value":"2"}],"image":"i1","name":"a"},{"image":"i2","name":"b"}],"tolerations":[{"key":"k1"},{"key":"k2"}],"volumes":[{"emptyDir":{"medium":"Memory"},"name":"v"}]}}`},
		{"$deleteFromPrimitiveList with a bad prefix is refused", v1.Pod{}, pod, `{"metadata":{"$deleteFromPrimitiveListfinalizers":["y"]}}`, ""},
		{"$retainKeys clears the other keys", v1.Pod{}, pod,
			`{"spec":{"$setElementOrder/volumes":[{"name":"v"}],"volumes":[{"$retainKeys":["hostPath","name"],"hostPath":{"path":"/d"},"name":"v"}]}}`,
			`{"metadata":{"finalizers":["x","y","z"],"labels":{"a":"1","b":"2"},"name":"p"},"spec":{"containers":[{"args":["1","2"],"env":[{"name":"E","value":"1"},{"name":"F","value":"2"}],"image":"i1","name":"a"},{"image":"i2","name":"b"}],"tolerations":[{"key":"k1"},{"key":"k2"}],"volumes":[{"hostPath":{"path":"/d"},"name":"v"}]}}`},
		{"$retainKeys missing a patched key is refused", v1.Pod{}, pod,
			`{"spec":{"volumes":[{"$retainKeys":["name"],"hostPath":{"path":"/d"},"name":"v"}]}}`, ""},
		{"$retainKeys not a list is refused", v1.Pod{}, pod, `{"spec":{"volumes":[{"$retainKeys":"name","name":"v"}]}}`, ""},
		{"directives dropped from a value the original lacks", v1.Pod{}, `{"metadata":{"name":"p"}}`,
			`{"spec":{"containers":[{"name":"a"},{"name":"b","$patch":"delete"}],"volumes":[{"name":"v","emptyDir":{"$patch":"replace"}}]}}`,
			`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"a"}],"volumes":[{"name":"v"}]}}`},
		{"object as a merge key is refused (the library panics)", v1.Pod{}, pod, `{"spec":{"containers":[{"name":{"x":1}}]}}`, ""},
		{"object in $retainKeys is refused (the library panics)", v1.Pod{}, pod, `{"spec":{"volumes":[{"$retainKeys":[{"a":1}],"name":"v"}]}}`, ""},
		{"unknown object field present in both is refused", v1.ConfigMap{}, `{"extra":{"a":1}}`, `{"extra":{"b":2}}`, ""},
		{"unknown scalar field is set", v1.ConfigMap{}, `{"extra":1}`, `{"extra":2}`, `{"extra":2}`},
		{"object over scalar replaces", v1.ConfigMap{}, configMap, `{"data":"x"}`, `{"binaryData":{"b":"AA=="},"data":"x","metadata":{"name":"c"}}`},
		{"patch that is not JSON is refused", v1.ConfigMap{}, configMap, `{"data":`, ""},
		{"patch that is not an object is refused", v1.ConfigMap{}, configMap, `[1]`, ""},
		{"lists of lists are refused", v1.Pod{}, `{"metadata":{"finalizers":[["a"]]}}`, `{"metadata":{"finalizers":[["b"]]}}`, ""},
		{"mixed element types are refused", v1.Pod{}, pod, `{"metadata":{"finalizers":[1]}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyAgrees(t, []byte(tc.original), []byte(tc.patch), tc.typ)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("patch accepted: %s", got)
				}
				t.Logf("refused: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, got, []byte(tc.want)) {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestStrategicMergePatchTypes: a non-struct schema is refused.
func TestStrategicMergePatchTypes(t *testing.T) {
	for _, typ := range []any{nil, 1, map[string]any{}} {
		if _, err := StrategicMergePatch([]byte(`{}`), []byte(`{}`), typ); err == nil {
			t.Errorf("%T accepted", typ)
		}
	}
	if got, err := StrategicMergePatch(nil, []byte(`{"a":1}`), &v1.Pod{}); err != nil || string(got) != `{"a":1}` {
		t.Errorf("nil original: %s, %v", got, err)
	}
}

// generators returns a generator of filled objects of typ's type and one
// of objects blended from a given one and a fresh one.
func generators(r *rand.Rand, typ any) (fresh func() reflect.Value, blended func(reflect.Value) reflect.Value) {
	f := filler(r)
	rt := reflect.TypeOf(typ)
	fresh = func() reflect.Value {
		v := reflect.New(rt)
		f.Fill(v.Interface())
		return v
	}
	blended = func(a reflect.Value) reflect.Value {
		v := reflect.New(rt)
		v.Elem().Set(blend(r, a.Elem(), fresh().Elem()))
		return v
	}
	return fresh, blended
}

// TestApplyAgrees: for generated objects of the types the local API
// serves, our apply gives the library's bytes for the patches clients
// send: the two-way patch (kubectl patch/edit) applied to its original
// and to a third, concurrently changed object, and the three-way patch
// `kubectl apply` computes from the last-applied configuration, the new
// one and the live object.
func TestApplyAgrees(t *testing.T) {
	for _, typ := range []any{v1.Pod{}, v1.ConfigMap{}, v1.Secret{}} {
		t.Run(reflect.TypeOf(typ).Name(), func(t *testing.T) {
			newObj, blended := generators(rand.New(rand.NewSource(5)), typ)
			const n = 300
			applied := 0
			for i := 0; i < n; i++ {
				old := newObj()
				mod, live := blended(old), blended(old)
				oldJSON, modJSON, liveJSON := mustJSON(t, old.Interface()), mustJSON(t, mod.Interface()), mustJSON(t, live.Interface())
				if p, err := CreateTwoWayMergePatch(oldJSON, modJSON, typ); err == nil {
					if _, err := applyAgrees(t, oldJSON, p, typ); err == nil {
						applied++
					}
					applyAgrees(t, liveJSON, p, typ)
				}
				schema, err := strategicpatch.NewPatchMetaFromStruct(typ)
				if err != nil {
					t.Fatal(err)
				}
				if p, err := strategicpatch.CreateThreeWayMergePatch(oldJSON, modJSON, liveJSON, schema, true); err == nil {
					if _, err := applyAgrees(t, liveJSON, p, typ); err == nil {
						applied++
					}
				}
			}
			t.Logf("%d of %d patches applied", applied, 2*n)
			if applied < n {
				t.Errorf("only %d of %d patches applied: the generator tests too little", applied, 2*n)
			}
		})
	}
}

// TestApplyAgreesOnEditedPatches edits the generated patches the way a
// hand-written or hostile patch might (directives in maps and lists,
// nulls, missing merge keys, shuffled lists and orders): ours refuses
// what the library refuses and gives its bytes otherwise.
func TestApplyAgreesOnEditedPatches(t *testing.T) {
	for _, typ := range []any{v1.Pod{}, v1.ConfigMap{}, v1.Secret{}} {
		t.Run(reflect.TypeOf(typ).Name(), func(t *testing.T) {
			r := rand.New(rand.NewSource(7))
			newObj, blended := generators(r, typ)
			const n = 400
			refused, applied := 0, 0
			for i := 0; i < n; i++ {
				old := newObj()
				mod := blended(old)
				oldJSON, modJSON := mustJSON(t, old.Interface()), mustJSON(t, mod.Interface())
				p, err := CreateTwoWayMergePatch(oldJSON, modJSON, typ)
				if err != nil {
					continue
				}
				var doc map[string]any
				if err := json.Unmarshal(p, &doc); err != nil {
					t.Fatal(err)
				}
				edited := mustJSON(t, editPatch(r, doc))
				if _, err := applyAgrees(t, oldJSON, edited, typ); err != nil {
					refused++
				} else {
					applied++
				}
			}
			t.Logf("%d edited patches applied, %d refused by both", applied, refused)
			if applied < n/4 || refused < n/20 {
				t.Errorf("%d applied, %d refused: the edits test too little", applied, refused)
			}
		})
	}
}

// editPatch changes a decoded patch at random, in place.
func editPatch(r *rand.Rand, v any) any {
	switch o := v.(type) {
	case map[string]any:
		for k, x := range o {
			switch r.Intn(30) {
			case 0:
				// Not a $deleteFromPrimitiveList: null for it deletes
				// the list too, before or after the list is merged, in
				// map order (the library's result then varies).
				if !strings.HasPrefix(k, deleteFromPrefix) {
					o[k] = nil
				}
			case 1:
				delete(o, k)
			default:
				o[k] = editPatch(r, x)
			}
		}
		switch r.Intn(40) {
		case 0:
			o[patchDirective] = pick(r, []string{deleteValue, replaceValue, mergeValue, "bogus"})
		case 1:
			keys := []any{}
			for k := range o {
				if r.Intn(4) != 0 {
					keys = append(keys, k)
				}
			}
			o[retainKeysKey] = keys
		}
		return o
	case []any:
		for i, x := range o {
			if m, ok := x.(map[string]any); ok && r.Intn(20) == 0 {
				for k := range m {
					if r.Intn(2) == 0 {
						m[patchDirective] = pick(r, []string{deleteValue, replaceValue, mergeValue})
					} else {
						delete(m, k)
					}
					break
				}
			}
			o[i] = editPatch(r, x)
		}
		if r.Intn(15) == 0 {
			r.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
		}
		if r.Intn(30) == 0 {
			o = append(o, map[string]any{patchDirective: replaceValue})
		}
		return o
	}
	return v
}

// FuzzStrategicMergePatch compares ours with the library on arbitrary
// documents and patches against the Pod schema. A patch with both
// "$deleteFromPrimitiveList/X" and "X" in one map has a map-order dependent
// result in the library itself (which of the two it meets first decides
// whether X is looked up in the schema), so such inputs are not compared.
func FuzzStrategicMergePatch(f *testing.F) {
	f.Add([]byte(`{"metadata":{"finalizers":["a","b"]},"spec":{"containers":[{"name":"a","image":"x"}]}}`),
		[]byte(`{"metadata":{"$setElementOrder/finalizers":["b","c"],"$deleteFromPrimitiveList/finalizers":["a"],"finalizers":["c"]},"spec":{"containers":[{"name":"a","$patch":"delete"},{"name":"b"}]}}`))
	f.Add([]byte(`{"spec":{"volumes":[{"name":"v","emptyDir":{}}]}}`),
		[]byte(`{"spec":{"volumes":[{"$retainKeys":["name","hostPath"],"name":"v","hostPath":{"path":"/"}}]}}`))
	f.Add([]byte(`{"metadata":{"labels":{"a":"1"}}}`), []byte(`{"metadata":{"labels":{"$patch":"replace","b":"2"}}}`))
	f.Fuzz(func(t *testing.T, original, patch []byte) {
		var doc any
		if json.Unmarshal(patch, &doc) == nil && deleteListBesideItsList(doc) {
			return
		}
		applyAgrees(t, original, patch, v1.Pod{})
	})
}

// deleteListBesideItsList reports whether some map of v holds both
// "$deleteFromPrimitiveList/X" and "X".
func deleteListBesideItsList(v any) bool {
	switch o := v.(type) {
	case map[string]any:
		for k, x := range o {
			if name, ok := strings.CutPrefix(k, deleteFromPrefix+"/"); ok {
				if _, both := o[name]; both {
					return true
				}
			}
			if deleteListBesideItsList(x) {
				return true
			}
		}
	case []any:
		for _, x := range o {
			if deleteListBesideItsList(x) {
				return true
			}
		}
	}
	return false
}
