package logs

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// timeFormatOut prints timestamps with a fixed nine-digit fraction, so that
// timestamped lines line up and sort as text (upstream's RFC3339NanoFixed).
const timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"

// errMalformed marks a line that is not in the CRI log format.
var errMalformed = errors.New("malformed CRI log line")

// record is one line of a CRI log file:
//
//	<RFC 3339 timestamp> <stdout|stderr> <P|F>[:more tags] <content>
//
// A partial (P) record continues in the stream's next record; a full (F)
// record ends a line. content keeps the file's trailing newline on full
// records and drops it on partial ones, so concatenating the contents of a
// stream rebuilds the container's output.
type record struct {
	ts      time.Time
	stream  runtimeapi.LogStreamType
	partial bool
	content []byte
}

// parseRecord parses one physical line (with or without its newline). The
// content aliases line.
func parseRecord(line []byte) (record, error) {
	var rec record
	stamp, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return rec, fmt.Errorf("%w: no timestamp", errMalformed)
	}
	ts, err := time.Parse(time.RFC3339Nano, string(stamp))
	if err != nil {
		return rec, fmt.Errorf("%w: timestamp: %w", errMalformed, err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return rec, fmt.Errorf("%w: no stream", errMalformed)
	}
	rec.stream = runtimeapi.LogStreamType(stream)
	if rec.stream != runtimeapi.Stdout && rec.stream != runtimeapi.Stderr {
		return rec, fmt.Errorf("%w: unknown stream %q", errMalformed, stream)
	}
	tags, content, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return rec, fmt.Errorf("%w: no tag", errMalformed)
	}
	// Only the first tag matters; later ones are kept for forward compatibility.
	first, _, _ := bytes.Cut(tags, []byte(runtimeapi.LogTagDelimiter))
	rec.partial = runtimeapi.LogTag(first) == runtimeapi.LogTagPartial
	if rec.partial {
		content = bytes.TrimSuffix(content, []byte{'\n'})
	}
	rec.ts, rec.content = ts, content
	return rec, nil
}
