package criconfig

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "alpha", "B": "beta", "EMPTY": ""}
	tests := []struct{ name, in, want string }{
		{name: "no references", in: "plain text", want: "plain text"},
		{name: "one reference", in: "$(A)", want: "alpha"},
		{name: "references inside text", in: "x-$(A)-$(B)-y", want: "x-alpha-beta-y"},
		{name: "unknown reference stays", in: "$(NOPE) and $(A)", want: "$(NOPE) and alpha"},
		{name: "empty value expands", in: "[$(EMPTY)]", want: "[]"},
		{name: "escaped reference", in: "$$(A)", want: "$(A)"},
		{name: "escaped dollar", in: "cost $$5", want: "cost $5"},
		{name: "double escape then reference", in: "$$$(A)", want: "$alpha"},
		{name: "lone dollar kept", in: "a $ b", want: "a $ b"},
		{name: "dollar before other char kept", in: "$HOME/$(A)", want: "$HOME/alpha"},
		{name: "trailing dollar kept", in: "end$", want: "end$"},
		{name: "unterminated reference kept", in: "$(A", want: "$(A"},
		// The name runs to the first ")", so this looks up "$(A" and keeps it.
		{name: "reference name runs to first paren", in: "$($(A)", want: "$($(A)"},
		{name: "unterminated then reference", in: "$( $(A)", want: "$( $(A)"},
		{name: "empty name stays", in: "$()", want: "$()"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Expand(tc.in, lookupIn(vars)); got != tc.want {
				t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
