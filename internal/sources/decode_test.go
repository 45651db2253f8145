package sources

import (
	"reflect"
	"strings"
	"testing"
)

const podA = `apiVersion: v1
kind: Pod
metadata:
  name: a
spec:
  containers:
  - name: c
    image: busybox
`

func TestDecodePods(t *testing.T) {
	tests := []struct {
		name      string
		data      string
		wantNames []string
		wantErr   string
	}{
		{name: "single YAML pod", data: podA, wantNames: []string{"a"}},
		{
			name:      "single JSON pod",
			data:      `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
			wantNames: []string{"j"},
		},
		{
			name: "pod list",
			data: `apiVersion: v1
kind: PodList
items:
- metadata: {name: l1}
  spec: {containers: [{name: c, image: busybox}]}
- metadata: {name: l2}
  spec: {containers: [{name: c, image: busybox}]}
`,
			wantNames: []string{"l1", "l2"},
		},
		{
			name:      "JSON pod list",
			data:      `{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"j1"}},{"metadata":{"name":"j2"}}]}`,
			wantNames: []string{"j1", "j2"},
		},
		{
			name:      "multiple documents, a list among them, empty and comment-only documents ignored",
			data:      "---\n" + podA + "---\n# just a comment\n---\napiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: b}\n---\n\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: c}\n",
			wantNames: []string{"a", "b", "c"},
		},
		{
			name:      "empty pod list is no pods but no error",
			data:      "apiVersion: v1\nkind: PodList\nitems: []\n",
			wantNames: []string{},
		},
		{
			name:      "unknown fields are ignored",
			data:      "apiVersion: v1\nkind: Pod\nmetadata: {name: u, bogus: 1}\nspec:\n  notAField: true\n  containers: [{name: c, image: busybox, alsoBogus: x}]\n",
			wantNames: []string{"u"},
		},
		{
			name:      "field names are case sensitive",
			data:      "apiVersion: v1\nkind: Pod\nMetadata: {name: upper}\n",
			wantNames: []string{""},
		},
		{name: "other kind is refused", data: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", wantErr: "unsupported object apps/v1 Deployment"},
		{name: "other version of Pod is refused", data: "apiVersion: v2\nkind: Pod\nmetadata: {name: d}\n", wantErr: "unsupported object v2 Pod"},
		{name: "missing kind is refused", data: "apiVersion: v1\nmetadata: {name: d}\n", wantErr: "apiVersion and kind are required"},
		{name: "bad document among good ones fails the whole input", data: podA + "---\napiVersion: v1\nkind: Service\n", wantErr: "document 1: unsupported object v1 Service"},
		{name: "invalid YAML", data: "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n", wantErr: "not valid YAML or JSON"},
		{name: "scalar document", data: "just text\n", wantErr: "not a JSON object"},
		{name: "wrong field type", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: 5}\nspec: {containers: 3}\n", wantErr: "decoding Pod"},
		{name: "empty input", data: "", wantErr: errNoObjects.Error()},
		{name: "only comments", data: "# nothing\n---\n", wantErr: errNoObjects.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pods, err := decodePods([]byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			names := []string{}
			for _, p := range pods {
				names = append(names, p.Name)
				if p.Kind != "" || p.APIVersion != "" {
					t.Errorf("pod %q keeps TypeMeta %v; decoded pods must not carry it", p.Name, p.TypeMeta)
				}
			}
			if !reflect.DeepEqual(names, tc.wantNames) {
				t.Errorf("names = %v, want %v", names, tc.wantNames)
			}
		})
	}
}
