package stats

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
)

// expoWriter writes the Prometheus text exposition format (0.0.4) as
// client_golang's encoder does: families sorted by name, each with HELP and
// TYPE, values in the shortest 'g' form, timestamps in milliseconds.
type expoWriter struct {
	w        *bufio.Writer
	num, lbl []byte
	err      error
}

func newExpoWriter(w io.Writer) *expoWriter {
	return &expoWriter{w: bufio.NewWriterSize(w, 64<<10), num: make([]byte, 0, 32)}
}

func (x *expoWriter) flush() error {
	if err := x.w.Flush(); err != nil {
		return err
	}
	return x.err
}

func (x *expoWriter) header(name, help, typ string) {
	x.w.WriteString("# HELP ")
	x.w.WriteString(name)
	x.w.WriteByte(' ')
	x.w.WriteString(escapeHelp(help))
	x.w.WriteString("\n# TYPE ")
	x.w.WriteString(name)
	x.w.WriteByte(' ')
	x.w.WriteString(typ)
	x.w.WriteByte('\n')
}

// label is one name="value" pair, the value already escaped.
type label struct{ Name, Value string }

// series writes one sample; labels must be sorted by name; tsMillis 0
// writes none.
func (x *expoWriter) series(name string, labels []label, v float64, tsMillis int64) {
	x.lbl = appendLabels(x.lbl[:0], labels)
	x.seriesRendered(name, x.lbl, v, tsMillis)
}

// seriesRendered writes one sample whose labels are rendered already
// (appendLabels): name="value" pairs, comma separated, without braces.
func (x *expoWriter) seriesRendered(name string, labels []byte, v float64, tsMillis int64) {
	x.w.WriteString(name)
	if len(labels) > 0 {
		x.w.WriteByte('{')
		x.w.Write(labels)
		x.w.WriteByte('}')
	}
	x.w.WriteByte(' ')
	x.num = appendFloat(x.num[:0], v)
	if tsMillis != 0 {
		x.num = append(x.num, ' ')
		x.num = strconv.AppendInt(x.num, tsMillis, 10)
	}
	x.num = append(x.num, '\n')
	x.w.Write(x.num)
}

// appendLabels renders labels (values escaped already) as the text
// exposition format writes them between braces.
func appendLabels(b []byte, labels []label) []byte {
	for i, l := range labels {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l.Name...)
		b = append(b, `="`...)
		b = append(b, l.Value...)
		b = append(b, '"')
	}
	return b
}

// appendFloat formats v as client_golang's text encoder does.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case v == 1:
		return append(b, '1')
	case v == 0:
		return append(b, '0')
	case v == -1:
		return append(b, "-1"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string {
	if !strings.ContainsAny(s, "\\\n") {
		return s
	}
	return helpEscaper.Replace(s)
}

func escapeValue(s string) string {
	if !strings.ContainsAny(s, "\\\n\"") {
		return s
	}
	return valueEscaper.Replace(s)
}

// mergeLabels merges two label lists sorted by name into dst.
func mergeLabels(dst, a, b []label) []label {
	dst = dst[:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].Name < b[j].Name {
			dst = append(dst, a[i])
			i++
		} else {
			dst = append(dst, b[j])
			j++
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}
