package logs

import (
	"errors"
	"fmt"
	"io"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// errLimitReached ends a read once LimitBytes bytes were written.
var errLimitReached = errors.New("log byte limit reached")

// lineState tracks one stream's line across partial records.
type lineState struct {
	open bool // the last record was partial: the next one continues its line
	skip bool // the open line is older than since
}

// sink writes records to the requested streams, applying since (per line),
// timestamps (once per line) and the byte limit (on everything written).
type sink struct {
	out     [2]io.Writer // stdout, stderr; nil drops that stream
	state   [2]lineState
	since   time.Time
	stamps  bool
	limited bool
	remain  int64
	buf     []byte
}

func newSink(stdout, stderr io.Writer, opts Options) *sink {
	s := &sink{out: [2]io.Writer{stdout, stderr}, stamps: opts.Timestamps}
	if opts.SinceTime != nil {
		s.since = *opts.SinceTime
	}
	if opts.LimitBytes != nil {
		s.limited, s.remain = true, *opts.LimitBytes
	}
	return s
}

// write writes rec; it returns errLimitReached once the limit is used up.
func (s *sink) write(rec record) error {
	i := 0
	if rec.stream == runtimeapi.Stderr {
		i = 1
	}
	st := &s.state[i]
	lineStart := !st.open
	if lineStart {
		st.skip = rec.ts.Before(s.since)
	}
	st.open = rec.partial
	w := s.out[i]
	if w == nil || st.skip {
		return nil
	}
	if s.limited && s.remain <= 0 {
		return errLimitReached
	}
	out := rec.content
	if s.stamps && lineStart {
		s.buf = rec.ts.AppendFormat(s.buf[:0], timeFormatOut)
		s.buf = append(s.buf, ' ')
		s.buf = append(s.buf, rec.content...)
		out = s.buf
	}
	if s.limited && int64(len(out)) > s.remain {
		out = out[:s.remain]
	}
	if len(out) == 0 {
		return nil
	}
	n, err := w.Write(out)
	if s.limited {
		s.remain -= int64(n)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", rec.stream, err)
	}
	if n < len(out) {
		return fmt.Errorf("write %s: %w", rec.stream, io.ErrShortWrite)
	}
	if s.limited && s.remain <= 0 {
		return errLimitReached
	}
	return nil
}

// flush pushes buffered output to the client before the reader blocks.
func (s *sink) flush() {
	for _, w := range s.out {
		switch f := w.(type) { // nil matches no case
		case interface{ Flush() error }:
			_ = f.Flush()
		case interface{ Flush() }:
			f.Flush()
		}
	}
}
