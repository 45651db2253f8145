package podutil

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The cases and values are upstream's (third_party/forked/golang/expansion
// expand_test.go), which every $(VAR) expansion of the kubelet follows.
func TestExpandUpstreamCases(t *testing.T) {
	single := MappingFuncFor(map[string]string{
		"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": "",
	})
	dual := MappingFuncFor(
		map[string]string{"VAR_A": "A", "VAR_EMPTY": ""},
		map[string]string{"VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)"},
	)
	cases := []struct{ name, in, want string }{
		{"whole string", "$(VAR_A)", "A"},
		{"repeat", "$(VAR_A)-$(VAR_A)", "A-A"},
		{"beginning", "$(VAR_A)-1", "A-1"},
		{"middle", "___$(VAR_B)___", "___B___"},
		{"end", "___$(VAR_C)", "___C"},
		{"compound", "$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"},
		{"escape & expand", "$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"},
		{"compound escape", "$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"},
		{"mixed in escapes", "f000-$$VAR_A", "f000-$VAR_A"},
		{"backslash escape ignored", `foo\$(VAR_C)bar`, `foo\Cbar`},
		{"double backslash ignored", `foo\\$(VAR_C)bar`, `foo\\Cbar`},
		{"lots of backslashes", `foo\\\\$(VAR_A)bar`, `foo\\\\Abar`},
		{"nested var references", "$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"},
		{"nested var references second type", "$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"},
		{"value is a reference", "$(VAR_REF)", "$(VAR_A)"},
		{"value is a reference x 2", "%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"},
		{"empty var", "foo$(VAR_EMPTY)bar", "foobar"},
		{"unterminated expression", "foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"},
		{"expression without operator", "f00__(VAR_A)__", "f00__(VAR_A)__"},
		{"shell special vars pass through", "$?_boo_$!", "$?_boo_$!"},
		{"bare operators are ignored", "$VAR_A", "$VAR_A"},
		{"undefined vars are passed through", "$(VAR_DNE)", "$(VAR_DNE)"},
		{"multiple (even) operators, var undefined", "$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"},
		{"multiple (even) operators, var defined", "$$$$$$(VAR_A)", "$$$(VAR_A)"},
		{"multiple (odd) operators, var undefined", "$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"},
		{"multiple (odd) operators, var defined", "$$$$$$$(VAR_A)", "$$$A"},
		{"missing open expression", "$VAR_A)", "$VAR_A)"},
		{"shell syntax ignored", "${VAR_A}", "${VAR_A}"},
		{"trailing incomplete expression not consumed", "$(VAR_B)_______$(A", "B_______$(A"},
		{"trailing incomplete expression, no content", "$(VAR_C)_______$(", "C_______$("},
		{"operator at end of input string is preserved", "$(VAR_A)foobarzab$", "Afoobarzab$"},
		{"shell escaped incomplete expr", `foo-\$(VAR_A`, `foo-\$(VAR_A`},
		{"lots of $( in middle", "--$($($($($--", "--$($($($($--"},
		{"lots of $( in beginning", "$($($($($--foo$(", "$($($($($--foo$("},
		{"lots of $( at end", "foo0--$($($($(", "foo0--$($($($("},
		{"escaped operators in variable names are not escaped", "$(foo$$var)", "$(foo$$var)"},
		{"newline not expanded", "\n", "\n"},
		{"dollar before non-ASCII", "$£FOO", "$£FOO"},
		{"dollar before multi-byte in middle", "prefix-$€-suffix", "prefix-$€-suffix"},
		{"dollar before Chinese", "$中文", "$中文"},
		{"empty name", "$()", "$()"},
		{"reference name runs to the first paren", "$($(VAR_A)", "$($(VAR_A)"},
		{"unterminated then reference", "$( $(VAR_A)", "$( $(VAR_A)"},
		{"escaped dollar before a digit", "cost $$5", "cost $5"},
		{"double escape then reference", "$$$(VAR_A)", "$A"},
		{"no operator", "plain", "plain"},
		{"empty", "", ""},
	}
	for _, m := range []struct {
		name    string
		mapping func(string) string
	}{{"single", single}, {"dual", dual}} {
		for _, tc := range cases {
			if got := Expand(tc.in, m.mapping); got != tc.want {
				t.Errorf("%s/%s: Expand(%q) = %q, want %q", m.name, tc.name, tc.in, got, tc.want)
			}
		}
	}
}

// Upstream's TestMapReference: env values expand in declaration order
// against what is defined so far.
func TestExpandInDeclarationOrder(t *testing.T) {
	declared := map[string]string{"FOO": "bar", "ZOO": "$(FOO)-1", "BLU": "$(ZOO)-2"}
	mapping := MappingFuncFor(declared, map[string]string{})
	for _, e := range []v1.EnvVar{{Name: "FOO", Value: "bar"}, {Name: "ZOO", Value: "$(FOO)-1"}, {Name: "BLU", Value: "$(ZOO)-2"}} {
		declared[e.Name] = Expand(e.Value, mapping)
	}
	want := map[string]string{"FOO": "bar", "ZOO": "bar-1", "BLU": "bar-1-2"}
	if !reflect.DeepEqual(declared, want) {
		t.Errorf("env = %v, want %v", declared, want)
	}
}

// Upstream's ExpandContainerCommandOnlyStatic: only literal values; a
// valueFrom entry counts as its empty literal value; unknown names stay.
func TestExpandCommandOnlyStatic(t *testing.T) {
	env := []v1.EnvVar{
		{Name: "A", Value: "a"},
		{Name: "REF", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
	}
	cases := []struct {
		name string
		cmd  []string
		want []string
	}{
		{"nil stays nil", nil, nil},
		{"empty stays nil", []string{}, nil},
		{"literal", []string{"echo", "$(A)"}, []string{"echo", "a"}},
		{"valueFrom is empty", []string{"x$(REF)y"}, []string{"xy"}},
		{"unknown stays", []string{"$(MISSING)", "$$(A)"}, []string{"$(MISSING)", "$(A)"}},
	}
	for _, tc := range cases {
		if got := ExpandCommandOnlyStatic(tc.cmd, env); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %#v, want %#v", tc.name, got, tc.want)
		}
	}
}
