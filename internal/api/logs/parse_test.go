package logs

import (
	"errors"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestParseRecord(t *testing.T) {
	plus2 := time.FixedZone("", 2*3600)
	tests := []struct {
		name    string
		line    string
		want    record
		wantErr bool
	}{
		{
			name: "full stdout line keeps its newline",
			line: "2026-03-01T10:00:00.123456789Z stdout F hello world\n",
			want: record{ts: time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC), stream: runtimeapi.Stdout, content: []byte("hello world\n")},
		},
		{
			name: "stderr line",
			line: "2026-03-01T10:00:00Z stderr F oops\n",
			want: record{ts: t0, stream: runtimeapi.Stderr, content: []byte("oops\n")},
		},
		{
			name: "partial line drops its newline",
			line: "2026-03-01T10:00:00Z stdout P part one\n",
			want: record{ts: t0, stream: runtimeapi.Stdout, partial: true, content: []byte("part one")},
		},
		{
			name: "extra tags are ignored",
			line: "2026-03-01T10:00:00Z stdout P:future:tags x\n",
			want: record{ts: t0, stream: runtimeapi.Stdout, partial: true, content: []byte("x")},
		},
		{
			name: "empty content",
			line: "2026-03-01T10:00:00Z stdout F \n",
			want: record{ts: t0, stream: runtimeapi.Stdout, content: []byte("\n")},
		},
		{
			name: "content keeps its spaces",
			line: "2026-03-01T10:00:00Z stdout F  a  b \n",
			want: record{ts: t0, stream: runtimeapi.Stdout, content: []byte(" a  b \n")},
		},
		{
			name: "timezone offset and short fraction",
			line: "2026-03-01T12:00:00.5+02:00 stdout F z\n",
			want: record{ts: time.Date(2026, 3, 1, 12, 0, 0, 500000000, plus2), stream: runtimeapi.Stdout, content: []byte("z\n")},
		},
		{
			name: "unterminated line",
			line: "2026-03-01T10:00:00Z stdout F tail",
			want: record{ts: t0, stream: runtimeapi.Stdout, content: []byte("tail")},
		},
		{name: "empty line", line: "\n", wantErr: true},
		{name: "no delimiter", line: "garbage\n", wantErr: true},
		{name: "bad timestamp", line: "yesterday stdout F x\n", wantErr: true},
		{name: "unknown stream", line: "2026-03-01T10:00:00Z stdin F x\n", wantErr: true},
		{name: "no stream delimiter", line: "2026-03-01T10:00:00Z stdout\n", wantErr: true},
		{name: "no tag delimiter", line: "2026-03-01T10:00:00Z stdout F\n", wantErr: true},
		{name: "docker json is not CRI", line: `{"log":"x\n","stream":"stdout","time":"2026-03-01T10:00:00Z"}` + "\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRecord([]byte(tc.line))
			if tc.wantErr {
				if !errors.Is(err, errMalformed) {
					t.Fatalf("parseRecord(%q) error = %v, want errMalformed", tc.line, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseRecord(%q): %v", tc.line, err)
			}
			if !got.ts.Equal(tc.want.ts) || got.ts.Format(time.RFC3339Nano) != tc.want.ts.Format(time.RFC3339Nano) {
				t.Errorf("ts = %v, want %v", got.ts, tc.want.ts)
			}
			if got.stream != tc.want.stream || got.partial != tc.want.partial || string(got.content) != string(tc.want.content) {
				t.Errorf("got {%s partial=%v %q}, want {%s partial=%v %q}", got.stream, got.partial, got.content, tc.want.stream, tc.want.partial, tc.want.content)
			}
		})
	}
}
