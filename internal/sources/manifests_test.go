package sources

import (
	"reflect"
	"testing"
)

func TestSplitAndJoinManifest(t *testing.T) {
	in := "# comment\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: team}\n---\n---\n{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}\n---\nnot: [valid\n"
	docs, err := SplitManifest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	type id struct{ apiVersion, kind, namespace, name string }
	var got []id
	for _, d := range docs {
		got = append(got, id{d.APIVersion, d.Kind, d.Namespace, d.Name})
	}
	want := []id{{"v1", "ConfigMap", "team", "a"}, {"v1", "Pod", "default", "p"}, {}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("documents = %+v, want %+v", got, want)
	}
	joined := string(JoinManifest([][]byte{docs[0].Raw, docs[2].Raw}))
	if joined != "# comment\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: team}\n---\nnot: [valid\n" {
		t.Errorf("joined = %q", joined)
	}
}
