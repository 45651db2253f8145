// Command junitsummary compares the JUnit reports of one upstream e2e run
// per kubelet (hack/conformance.sh) and prints a Markdown table: one row per
// spec that ran on any of them, its outcome on each, and the first line of
// each failure. Specs skipped everywhere are counted, not listed.
package main
