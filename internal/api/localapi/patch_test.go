package localapi

import (
	"testing"
)

// RFC 7386's examples (appendix A).
func TestMergePatch(t *testing.T) {
	tests := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, tc := range tests {
		got, err := mergePatch([]byte(tc.target), []byte(tc.patch))
		if err != nil || string(got) != tc.want {
			t.Errorf("merge %s with %s = %s (%v), want %s", tc.target, tc.patch, got, err, tc.want)
		}
	}
	if _, err := mergePatch([]byte(`{}`), []byte(`{`)); err == nil {
		t.Error("a malformed patch was taken")
	}
}
