package logs

import (
	"bytes"
	"fmt"
	"io"
)

const (
	// tailBlockSize is how much tailOffset reads at a time, from the end.
	tailBlockSize = 64 << 10
	// headerMax bounds the bytes of a line tailOffset parses: enough for
	// the timestamp, stream and tags, never the content.
	headerMax = 256
)

// tailOffset returns where the last n lines of a CRI log of the given size
// start. A line is a run of records ending with a full (F) record; the run
// of partial records at the end, a line still being written, counts as one.
// Malformed lines and an unterminated last physical line count for nothing.
// The file is read backwards in blocks and only line headers are parsed, so
// the cost follows n, not the file's size. n < 0 means the whole file.
func tailOffset(r io.ReaderAt, size, n int64) (int64, error) {
	return tailOffsetBlocks(r, size, n, tailBlockSize)
}

func tailOffsetBlocks(r io.ReaderAt, size, n int64, blockSize int) (int64, error) {
	if n < 0 || size <= 0 {
		return 0, nil
	}
	var (
		count     int64
		seenValid bool
		lineEnd   int64  = -1 // end (after '\n') of the line being delimited
		block            = make([]byte, blockSize)
		next      []byte // up to headerMax bytes after the current block
		hdr       = make([]byte, 0, headerMax)
	)
	// boundary is given the header of each complete line, last line first;
	// it reports whether that line ends the (n+1)th line from the end, so
	// that the last n lines start right after it.
	boundary := func(hdr []byte) bool {
		rec, err := parseRecord(hdr)
		if err != nil {
			return false
		}
		if !seenValid {
			seenValid = true
			if rec.partial {
				count++ // the line still being written
				if count > n {
					return true
				}
			}
		}
		if rec.partial {
			return false
		}
		count++
		return count > n
	}
	for pos := size; pos > 0; {
		sz := int64(len(block))
		if pos < sz {
			sz = pos
		}
		pos -= sz
		buf := block[:sz]
		if n, err := r.ReadAt(buf, pos); n < len(buf) {
			return 0, fmt.Errorf("read at %d: %w", pos, err)
		}
		// header returns the first bytes of the line starting at buf[i:],
		// cut at that line's end.
		header := func(i int, end int64) []byte {
			want := end - (pos + int64(i))
			if want > headerMax {
				want = headerMax
			}
			h := append(hdr[:0], buf[i:min(int64(len(buf)), int64(i)+want)]...)
			if rest := want - int64(len(h)); rest > 0 {
				h = append(h, next[:min(rest, int64(len(next)))]...)
			}
			return h
		}
		for i := len(buf); ; {
			nl := bytes.LastIndexByte(buf[:i], '\n')
			if nl < 0 {
				break
			}
			if lineEnd >= 0 && boundary(header(nl+1, lineEnd)) {
				return lineEnd, nil
			}
			lineEnd = pos + int64(nl) + 1
			i = nl
		}
		// The bytes after the next (earlier) block: this block, then what
		// followed it, up to a header's length.
		joined := make([]byte, 0, headerMax)
		joined = append(joined, buf[:min(headerMax, len(buf))]...)
		next = append(joined, next[:min(headerMax-len(joined), len(next))]...)
	}
	if lineEnd >= 0 && boundary(headerAt(next, lineEnd)) {
		return lineEnd, nil
	}
	return 0, nil
}

// headerAt is the header of the file's first line, which ends at end.
func headerAt(first []byte, end int64) []byte {
	return first[:min(end, int64(len(first)))]
}
