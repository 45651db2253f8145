package main

import (
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// JUnit as ginkgo's --junit-report writes it (only what we read).
type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Cases []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string        `xml:"name,attr"`
	Status  string        `xml:"status,attr"`
	Time    float64       `xml:"time,attr"`
	Failure *junitMessage `xml:"failure"`
	Error   *junitMessage `xml:"error"`
	Skipped *junitMessage `xml:"skipped"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// outcome is one spec's result on one kubelet.
type outcome struct {
	Status  string // passed, failed, skipped, or "" when absent
	Message string // first line of the failure
	Seconds float64
}

func (o outcome) ran() bool { return o.Status == "passed" || o.Status == "failed" }

// parse reads one report into spec name -> outcome. Ginkgo's suite-level
// entries ([SynchronizedBeforeSuite] and the like) are kept: a failing one
// explains a run where nothing passed.
func parse(r io.Reader) (map[string]outcome, error) {
	var s junitSuites
	if err := xml.NewDecoder(r).Decode(&s); err != nil {
		return nil, err
	}
	out := map[string]outcome{}
	for _, suite := range s.Suites {
		for _, c := range suite.Cases {
			o := outcome{Status: c.Status, Seconds: c.Time}
			switch {
			case c.Failure != nil || c.Error != nil:
				o.Status = "failed"
				m := c.Failure
				if m == nil {
					m = c.Error
				}
				o.Message = firstLine(m.Message, m.Body, c.Status)
			case c.Skipped != nil && o.Status == "":
				o.Status = "skipped"
			case o.Status == "":
				o.Status = "passed"
			}
			if o.Status == "timedout" || o.Status == "panicked" || o.Status == "interrupted" {
				o.Message, o.Status = firstLine(o.Message, o.Status), "failed"
			}
			out[specText(c.Name)] = o
		}
	}
	return out, nil
}

// specText turns ginkgo's JUnit test case name ("[It] <container and leaf
// texts> [label, label]") into the spec's text, what --focus matches.
func specText(name string) string {
	name = strings.TrimPrefix(name, "[It] ")
	if strings.HasSuffix(name, "]") {
		if i := strings.LastIndex(name, " ["); i >= 0 && strings.Contains(name[i:], ", ") {
			name = name[:i]
		}
	}
	return name
}

// merge adds later's outcomes to into; a spec that ran in later replaces
// what into has (a rerun of selected specs overrides the first run).
func merge(into, later map[string]outcome) {
	for name, o := range later {
		if old, ok := into[name]; !ok || o.ran() || !old.ran() {
			into[name] = o
		}
	}
}

func firstLine(candidates ...string) string {
	for _, s := range candidates {
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				if len(l) > 200 {
					l = l[:200] + "..."
				}
				return l
			}
		}
	}
	return ""
}

// table renders the comparison; names are the kubelets in column order.
func table(names []string, results []map[string]outcome) string {
	specs := map[string]bool{}
	for _, r := range results {
		for name, o := range r {
			if o.ran() {
				specs[name] = true
			}
		}
	}
	sorted := make([]string, 0, len(specs))
	for s := range specs {
		sorted = append(sorted, s)
	}
	sort.Strings(sorted)

	var b strings.Builder
	for i, n := range names {
		passed, failed := 0, 0
		for _, o := range results[i] {
			switch o.Status {
			case "passed":
				passed++
			case "failed":
				failed++
			}
		}
		fmt.Fprintf(&b, "%s: %d passed, %d failed\n", n, passed, failed)
	}
	b.WriteString("\n| spec |")
	for _, n := range names {
		fmt.Fprintf(&b, " %s |", n)
	}
	b.WriteString(" failure (first line) |\n|---|")
	for range names {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, s := range sorted {
		fmt.Fprintf(&b, "| %s |", escape(s))
		var msgs []string
		for i, n := range names {
			o := results[i][s]
			status := o.Status
			if status == "" {
				status = "not run"
			}
			fmt.Fprintf(&b, " %s |", status)
			if o.Status == "failed" {
				msgs = append(msgs, n+": "+escape(o.Message))
			}
		}
		fmt.Fprintf(&b, " %s |\n", strings.Join(msgs, "<br>"))
	}
	return b.String()
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: junitsummary [-failed] NAME=REPORT.xml[,RERUN.xml...] [NAME=...]")
		fmt.Fprintln(os.Stderr, "A spec that ran in a later report of a NAME replaces its earlier outcome.")
	}
	failedOnly := flag.Bool("failed", false, "print only the names of the specs that failed in any report, one a line")
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var names []string
	var results []map[string]outcome
	for _, arg := range flag.Args() {
		name, path, ok := strings.Cut(arg, "=")
		if !ok {
			flag.Usage()
			os.Exit(2)
		}
		merged := map[string]outcome{}
		for _, p := range strings.Split(path, ",") {
			f, err := os.Open(p)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			r, err := parse(f)
			f.Close()
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", p, err)
				os.Exit(1)
			}
			merge(merged, r)
		}
		names, results = append(names, name), append(results, merged)
	}
	if *failedOnly {
		fmt.Print(failed(results))
		return
	}
	fmt.Print(table(names, results))
}

// failed lists the specs that failed in any of results, sorted, one a line.
func failed(results []map[string]outcome) string {
	set := map[string]bool{}
	for _, r := range results {
		for name, o := range r {
			if o.Status == "failed" {
				set[name] = true
			}
		}
	}
	var names []string
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + "\n")
	}
	return b.String()
}
