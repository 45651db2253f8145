// Command report turns the reliability suite's figures (figures.jsonl, one
// JSON object a line, written by the tests in test/reliability) into a
// Markdown table: one row per figure, one column per kubelet, the bound the
// figure must meet beside it. The last line wins for a repeated figure.
//
//	go run ./test/reliability/report [-o results.md] figures.jsonl...
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"sort"
	"strconv"
	"strings"
)

// figure is one line of figures.jsonl (test/reliability's Figure).
type figure struct {
	Kubelet string  `json:"kubelet"`
	Full    bool    `json:"full"`
	Test    string  `json:"test"`
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Bound   string  `json:"bound"`
	OK      bool    `json:"ok"`
}

type row struct{ test, name string }

func main() {
	out := flag.String("o", "", "also write the table to this file")
	flag.Parse()
	if flag.NArg() == 0 {
		log.Fatal("usage: report [-o FILE] figures.jsonl...")
	}
	var figs []figure
	for _, path := range flag.Args() {
		f, err := read(path)
		if err != nil {
			log.Fatal(err)
		}
		figs = append(figs, f...)
	}
	table := render(figs)
	fmt.Print(table)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func read(path string) ([]figure, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return parse(fh)
}

func parse(r io.Reader) ([]figure, error) {
	var out []figure
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var f figure
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, f)
	}
	return out, sc.Err()
}

// render is the Markdown table of figs: rows in the order the figures first
// appear, kubelets "ours" then "upstream" then any other.
func render(figs []figure) string {
	var rows []row
	seen := map[row]bool{}
	values := map[row]map[string]figure{}
	kubelets := map[string]bool{}
	bounds := map[row]string{}
	for _, f := range figs {
		r := row{f.Test, f.Name}
		if !seen[r] {
			seen[r] = true
			rows = append(rows, r)
			values[r] = map[string]figure{}
		}
		values[r][f.Kubelet] = f
		kubelets[f.Kubelet] = true
		if f.Bound != "" {
			bounds[r] = f.Bound
		}
	}
	var cols []string
	for _, k := range []string{"ours", "upstream"} {
		if kubelets[k] {
			cols = append(cols, k)
			delete(kubelets, k)
		}
	}
	var rest []string
	for k := range kubelets {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	cols = append(cols, rest...)

	var b strings.Builder
	b.WriteString("| Test | Figure | Bound (ours) |")
	for _, c := range cols {
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n|---|---|---|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |", r.test, r.name, bounds[r])
		for _, c := range cols {
			f, ok := values[r][c]
			if !ok {
				b.WriteString(" – |")
				continue
			}
			cell := strconv.FormatFloat(f.Value, 'f', -1, 64) + f.Unit
			if f.Value != float64(int64(f.Value)) {
				cell = strconv.FormatFloat(f.Value, 'f', 2, 64) + f.Unit
			}
			if !f.OK {
				cell += " ✗"
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}
